"""The registry is the one place that knows a queued kind's plural, group/version and suspend path."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from batchgate import kinds

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("batchgate", "webhook", "controller", "dashboard")
REGISTRY = ROOT / "batchgate" / "kinds"

NOT_KIND_FACTS = {
    ("controller/adapters/manager.py", "jobs"): "the name of the reconcile loop of every queued kind",
    ("controller/adapters/manager.py", "appwrappers"): "the name of the AppWrapper controller's loop",
    ("dashboard/app.py", "appwrappers"): "the name and URL of the AppWrappers page",
    ("dashboard/views/observed.py", "appwrappers"): "the name of the AppWrappers page",
}
"""Literals that spell a kind fact by coincidence, and what they name instead."""


def kind_facts() -> dict[object, str]:
    """Each literal that spells a fact of a queued kind, and which fact it is."""
    facts: dict[object, str] = {}
    for kind in kinds.QUEUED.values():
        facts[kind.plural] = f"the plural of {kind.kind}"
        facts[kind.api_version] = f"the group/version of {kind.kind}"
        facts[kind.qualified] = f"the Kind.group of {kind.kind}"
        facts[kind.suspend_path] = f"the suspend path of {kind.kind}"
    return facts


def literals(tree: ast.AST) -> list[tuple[int, object]]:
    """String constants, and tuples or lists made only of string constants, with their lines."""
    found: list[tuple[int, object]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            found.append((node.lineno, tuple(e.value for e in node.elts)))  # type: ignore[attr-defined]
    return found


def product_files() -> list[Path]:
    return [p for pkg in PRODUCT for p in sorted((ROOT / pkg).rglob("*.py")) if REGISTRY not in p.parents]


@pytest.mark.parametrize("path", product_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_kind_fact_is_written_outside_the_registry(path: Path) -> None:
    facts = kind_facts()
    where = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(), filename=str(path))
    written = [f"line {line}: {value!r} is {facts[value]}" for line, value in literals(tree)
               if value in facts and (where, value) not in NOT_KIND_FACTS]
    assert written == [], "read it from batchgate.kinds instead"


def test_every_exception_is_still_there() -> None:
    """An exception whose literal went away is dropped from NOT_KIND_FACTS, so none hides a new fact."""
    stale = [key for key in NOT_KIND_FACTS
             if key[1] not in {value for _, value in literals(ast.parse((ROOT / key[0]).read_text()))}]
    assert stale == []


def test_the_scan_finds_a_fact_written_by_hand() -> None:
    tree = ast.parse('PLURAL = "rayjobs"\nAT = ("spec", "runPolicy", "suspend")\nGV = "ray.io/v1"\n')
    assert [value for _, value in literals(tree) if value in kind_facts()] == [
        "rayjobs", ("spec", "runPolicy", "suspend"), "ray.io/v1"]
