"""docs/check.md stays true: its example output is what the checker prints, and every code is documented."""

from __future__ import annotations

import re

import pytest

from controller.check import findings
from controller.check_cli import main
from tests.controller.cluster import ROOT

DOC = ROOT / "docs" / "check.md"
EXAMPLE = ROOT / "docs" / "check-example.yaml"


def test_the_documented_example_prints_what_the_doc_shows(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--from-file", str(EXAMPLE)])
    out = capsys.readouterr().out
    shown = re.search(r"\(exit status 1\):\n\n```\n(.*?)```", DOC.read_text(), re.S)
    assert shown is not None, "docs/check.md lost its example output block"
    assert code == 1
    assert out == shown.group(1)


def test_every_finding_code_is_documented() -> None:
    codes = [value for name, value in vars(findings).items() if name.isupper() and isinstance(value, str)
             and name != "SEVERITY_ORDER"]
    text = DOC.read_text()
    assert len(codes) >= 15
    assert [c for c in codes if f"`{c}`" not in text] == []
