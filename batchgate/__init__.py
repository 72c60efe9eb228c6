"""batchgate: admission gateway and reconcile controller for ML batch workloads.

This package is the shared vocabulary (keys, typed models, policy, quantities, time) and the
command line. It does no I/O of its own, so the webhook, the controller and the tests can all
import it cheaply.
"""

__version__ = "0.1.0"
