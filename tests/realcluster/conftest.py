from tests.realcluster_fixtures import real_cluster, real_kubectl_run  # noqa: F401
