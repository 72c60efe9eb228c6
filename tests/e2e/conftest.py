"""One gateway + cluster for the framework end-to-end tests (tests/e2e/stack.py).

Every end-to-end test runs on the cluster tests/clusters.py picks: the real control plane where it
is built (then it carries the `realcluster` marker; the demo's test runs `make demo --kube real`),
else the stand-in."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests import clusters
from tests.e2e.stack import Kubectl, Stack, running_stack

def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not clusters.on_real():
        return
    for item in items:
        if item.path.parent.name == "e2e":
            item.add_marker(pytest.mark.realcluster)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("framework-e2e")) as running:
        yield running


@pytest.fixture(scope="session")
def kubectl(stack: Stack) -> Kubectl:
    return stack.kubectl
