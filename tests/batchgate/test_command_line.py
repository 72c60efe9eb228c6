"""Bad input's line and exit status follow the name the program runs under: kubectl's form as a plugin."""

from __future__ import annotations

import pytest

from batchgate.command_line import error_line


@pytest.mark.parametrize("program, expected", [
    pytest.param("/venv/bin/kubectl-batchgate", ("error: bad", 1), id="under the plugin name errors read as kubectl's"),
    pytest.param("/venv/bin/batchgate", ("batchgate check: bad", 2), id="under batchgate's name as its commands' own"),
])
def test_bad_input_reads_as_the_program_run(program: str, expected: tuple[str, int]) -> None:
    assert error_line("batchgate check", "bad", program) == expected
