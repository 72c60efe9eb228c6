from tests.localcluster_fixtures import local_cluster  # noqa: F401  (session-scoped local cluster)
