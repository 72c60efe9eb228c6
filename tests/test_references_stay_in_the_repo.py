"""Comments, docstrings and docs point only at what a clone holds: docs/architecture.md and the
pages beside it, never at design notes or research notes kept outside the repository."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "build", "node_modules", ".mypy_cache", ".hypothesis", ".pytest_cache"}
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".html", ".js", ".css", ".sh",
                 ".env"}
TEXT_NAMES = {"Makefile", "Dockerfile", ".dockerignore", ".gitignore"}
OUTSIDE = re.compile(
    r"\bDESIGN\b"  # the design notes, by file or by section number
    r"|\bresearch/|shared/research|\bresearch (?:notes?\b|\d)"  # the research notes
    r"|\.\./shared\b"  # anything beside the clone, by a relative path
    r"|/work/"  # a path on the machine the code was written on
)


def repository_texts() -> list[Path]:
    found = []
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = [d for d in subdirectories if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(directory, name)
            if (path.suffix in TEXT_SUFFIXES or name in TEXT_NAMES) and path != Path(__file__):
                found.append(path)
    return sorted(found)


def outside_references(text: str) -> list[str]:
    return [f"{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]


@pytest.mark.parametrize(
    ("line", "outside"),
    [
        ("See DESIGN.md section 5.", True),
        ('"""Failure-policy rules (DESIGN 7.4)."""', True),
        ("# Kueue's arithmetic (research/kueue.md 2.3)", True),
        ("the deletion protocol (research 3.2)", True),
        ("upstream samples in ../shared/corpus", True),
        ("See `/work/wt/notes/bugs.md`", True),
        ("queues:\n  defaultQueueName: research", False),
        ("Kueue's arithmetic (docs/quota.md, \"Semantics\")", False),
        ("by design (MLBatch sets it off)", False),
        ("the upstream samples: `shared/corpus` beside the clone, skipped where absent", False),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_pattern_knows_an_outside_reference_from_ordinary_words(line: str, outside: bool) -> None:
    assert bool(outside_references(line)) == outside


def test_no_comment_docstring_or_doc_names_a_file_or_section_outside_the_repository() -> None:
    texts = repository_texts()
    assert len(texts) > 100 and ROOT / "docs" / "architecture.md" in texts
    found = [f"{path.relative_to(ROOT)}:{hit}" for path in texts for hit in outside_references(path.read_text())]
    assert found == [], "point these at docs/architecture.md or the docs/ page that says it:\n" + "\n".join(found)
