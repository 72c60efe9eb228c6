"""`@frozen`: immutable to the type checker, compared and hashed by fields, built as a plain dataclass."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

from mypy import api as mypy_api

from batchgate.frozen import frozen

REPO = Path(__file__).resolve().parents[2]


@frozen
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_values_compare_and_hash_by_their_fields() -> None:
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert hash(Point(1, 2, ("a",))) == hash(Point(1, 2, ("a",)))
    assert len({Point(1), Point(1), Point(2)}) == 2
    assert dataclasses.replace(Point(1, 2), y=3) == Point(1, 3)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags"]


def test_mypy_refuses_an_assignment_to_a_field(tmp_path: Path) -> None:
    """What `make test`'s type check holds; at run time the class is a plain dataclass."""
    source = tmp_path / "uses_frozen.py"
    source.write_text(textwrap.dedent("""
        from batchgate.frozen import frozen

        @frozen
        class Point:
            x: int

        p = Point(1)
        p.x = 2
        Point("one")
    """))
    out, _, status = mypy_api.run([str(source), "--no-incremental", "--python-version", "3.11",
                                   "--config-file", str(REPO / "pyproject.toml"), "--follow-imports", "silent"])
    assert status == 1
    assert 'uses_frozen.py:9: error: Property "x" defined in "Point" is read-only' in out
    assert 'uses_frozen.py:10: error: Argument 1 to "Point" has incompatible type "str"; expected "int"' in out
