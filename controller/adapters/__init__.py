"""Every I/O edge of the controller: API client, informers, queues, leases, status, events, metrics."""
