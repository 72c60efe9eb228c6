"""In-memory mirror of watched objects. Pure: no threads, no clocks, no kubernetes client."""
