"""The I/O half of the simulated cluster: API client, informers, work queues, and one adapter per
simulated component (scheduler, kubelets, node lifecycle, Job, PyTorchJob, Deployment/ReplicaSet,
endpoints). Each adapter watches the API server like a real controller, asks `localcluster.sim`
what to do, and writes the answer back over HTTPS, so every write passes admission.
"""
