from tests.localcluster_fixtures import kube_api, kubectl, local_cluster, namespace  # noqa: F401
