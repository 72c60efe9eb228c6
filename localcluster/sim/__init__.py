"""The pure half of the simulated cluster: scheduler, kubelet, node lifecycle and workload controllers.

Every module here is a function of observed objects (wire dicts), `now` and options that returns
decision values with reasons; nothing here does I/O or reads a clock. The adapters that watch the
API server and apply these decisions live beside this package.
"""
