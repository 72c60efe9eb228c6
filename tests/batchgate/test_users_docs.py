"""docs/users.md has a row for every generator setting, with its real default (a new setting
without a row, or a default changed in one place only, fails here)."""

from __future__ import annotations

import re
from pathlib import Path

from batchgate.generator.settings import REQUIRED, settings_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "users.md"
_ROW = re.compile(r"^\| `(\w+)` \| [^|]*(?:\\\|[^|]*)* \| ([^|]+) \|", re.MULTILINE)


def test_every_setting_has_a_row_with_its_default() -> None:
    rows = {key: default.strip() for key, default in _ROW.findall(DOC.read_text())}
    expected = {}
    for key, described in settings_schema()["properties"].items():
        default = described.get("default")
        expected[key] = ("required" if key in REQUIRED else "unset" if default is None
                         else f"`{str(default).lower() if isinstance(default, bool) else default}`")
    assert {k: v for k, v in rows.items() if k in expected} == expected
