"""`batchgate controller --relist-period`: how often every watched kind is listed again."""

from __future__ import annotations

import pytest

from controller.cli import parse_args


@pytest.mark.parametrize(("argv", "seconds"), [
    pytest.param([], 600.0, id="every ten minutes by default"),
    pytest.param(["--relist-period", "90"], 90.0, id="as often as asked"),
    pytest.param(["--relist-period", "0"], 0.0, id="0 turns it off"),
])
def test_the_period(argv: list[str], seconds: float) -> None:
    assert parse_args(argv).relist_period == seconds


def test_a_negative_period_is_refused_in_one_line_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["--relist-period", "-1"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("--relist-period must be >= 0 (0 turns it off)")
