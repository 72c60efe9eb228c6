"""Pure: observed objects -> page data. No flask, no kubernetes client, no threads, no clock."""
