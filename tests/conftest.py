"""The suite runs in a random order (pytest-randomly, pinned in requirements-test.txt), so no test
may lean on another having run first. `-q` hides the header that names the seed; it is repeated at
the end, where a failure that depends on the order can be replayed from.

The session-scoped clusters (tests/localcluster_fixtures.py, the runtime and processes conftests,
tests/e2e/conftest.py) are shared by every module that asks for them, in whatever order they run. A
test there names what it makes uniquely (its own namespace), restores in a `finally` whatever is
cluster-wide (node labels and cordons, the policy ConfigMap, webhook configurations), asserts on
what it made (on a whole list of Nodes, CRDs or `api-resources` rows only where no other module can
add to it), and fills the caches it reads (kubectl's --cache-dir is the session's: another test may
have filled it, or not).

Every kubectl the suite runs caches discovery in a directory of this run (KUBECACHEDIR), never in
~/.kube/cache: that cache is keyed by host and port, lives for hours, and would hand a cluster on a
reused port the API list of an earlier run's cluster.

Tests of upstream's own samples (marked `upstream_corpus`, tests/upstream_corpus.py) read them from
shared/corpus beside the clone; where it is absent they are skipped, and the summary says so in
one line: how many, in which files, and why."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.realcluster_fixtures import NOT_BUILT, mark_real
from tests.upstream_corpus import CORPUS, MARKER, REASON

_KUBE_CACHE = "KUBECACHEDIR"


def pytest_configure(config: pytest.Config) -> None:
    os.environ[_KUBE_CACHE] = tempfile.mkdtemp(prefix="batchgate-kubectl-cache-")
    config.addinivalue_line("markers", f"{MARKER}: checks batchgate against upstream's own samples in "
                                       "shared/corpus beside the clone; skipped where they are absent")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    """Around every other plugin's reordering (pytest-randomly's shuffle included: this conftest
    registers after it, so its wrapper is the outer one): marks first, then the tests marked
    `binds_every_address` moved to the front, in the order the shuffle gave them."""
    if CORPUS is None:
        for item in items:
            if item.get_closest_marker(MARKER):
                item.add_marker(pytest.mark.skip(reason=REASON), append=False)
    mark_real(items)
    yield
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("binds_every_address") is None)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ[_KUBE_CACHE], ignore_errors=True)


def skipped_for(terminalreporter: pytest.TerminalReporter, reason: str) -> list[str]:
    """The node ids of the tests skipped for `reason`."""
    return [r.nodeid for r in terminalreporter.stats.get("skipped", []) if reason in str(r.longrepr)]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    not_run = skipped_for(terminalreporter, REASON)
    if not_run:
        files = sorted({nodeid.split("::")[0] for nodeid in not_run})
        terminalreporter.write_line(f"{len(not_run)} tests of upstream's samples did not run ({REASON}): "
                                    f"{', '.join(files)}")
    unbuilt = skipped_for(terminalreporter, NOT_BUILT)
    if unbuilt:
        terminalreporter.write_line(f"{len(unbuilt)} tests did not run: {NOT_BUILT}")
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"tests ran in random order; replay it with -p randomly --randomly-seed={seed}")
