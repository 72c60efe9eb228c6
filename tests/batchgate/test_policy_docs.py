"""docs/policy.md documents every policy field (a new field without a row fails here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batchgate.policy import DEFAULT_POLICY

DOC = Path(__file__).resolve().parents[2] / "docs" / "policy.md"


MAP_VALUED = {"managedNamespaces.selector", "faultTolerance.nodeHealth.labels"}


def _leaf_paths(value: Any, prefix: str = "") -> list[str]:
    if isinstance(value, dict) and prefix not in MAP_VALUED:
        return [p for key, item in value.items() for p in _leaf_paths(item, f"{prefix}.{key}" if prefix else key)]
    return [prefix]


def test_every_policy_field_has_a_row() -> None:
    text = DOC.read_text()
    missing = [path for path in _leaf_paths(DEFAULT_POLICY.to_wire()) if f"| `{path}` |" not in text]
    assert missing == []
    assert len(_leaf_paths(DEFAULT_POLICY.to_wire())) >= 30
