import pytest

from tests.localcluster_fixtures import kube_api, kubectl, local_cluster, namespace, skip_standin_only  # noqa: F401


def pytest_runtest_setup(item: pytest.Item) -> None:
    skip_standin_only(item)
