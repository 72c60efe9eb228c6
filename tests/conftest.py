"""The suite runs in a random order (pytest-randomly, pinned in requirements-test.txt), so no test
may lean on another having run first. `-q` hides the header that names the seed; it is repeated at
the end, where a failure that depends on the order can be replayed from."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"tests ran in random order; replay it with -p randomly --randomly-seed={seed}")
