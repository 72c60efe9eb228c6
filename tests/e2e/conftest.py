"""One gateway + local cluster for the framework end-to-end tests (tests/e2e/stack.py)."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.e2e.stack import Kubectl, Stack, running_stack


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("framework-e2e")) as running:
        yield running


@pytest.fixture(scope="session")
def kubectl(stack: Stack) -> Kubectl:
    return stack.kubectl
