"""`batchgate check`: capacity against quotas, queue usage, and why work is pending (pure)."""
