"""bench/peers/kueue_scale.py's --kueue-feature-gates, in Kueue's own --feature-gates syntax: read
into a mapping, and anything else refused in one line naming the item."""

from __future__ import annotations

import argparse

import pytest

from bench.peers.kueue_scale import feature_gates, gate_text


@pytest.mark.parametrize("text, gates", [
    ("SchedulingEquivalenceHashing=true", {"SchedulingEquivalenceHashing": True}),
    ("A=true, B=FALSE,", {"A": True, "B": False}),
    ("", {}),
])
def test_gates_are_read_as_kueue_writes_them(text: str, gates: dict[str, bool]) -> None:
    assert feature_gates(text) == gates
    assert feature_gates(gate_text(gates)) == gates


@pytest.mark.parametrize("text", ["A", "A=yes", "=true", "A=true,B"])
def test_anything_else_is_refused_naming_the_item(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected Name=true or Name=false"):
        feature_gates(text)
