"""Field paths: how keys are printed, and which paths are remembered."""

from __future__ import annotations

import pytest

from batchgate.api import errors
from batchgate.api.errors import child


@pytest.mark.parametrize("path, key, expected", [
    ("spec.podSets", 0, "spec.podSets[0]"),
    ("spec", "podSets", "spec.podSets"),
    ("", "spec", "spec"),
    ("requests", "nvidia.com/gpu", "requests[nvidia.com/gpu]"),
    ("labels", "a b", 'labels["a b"]'),
    ("labels", "", 'labels[""]'),
    ("x", 1, "x[1]"),
])
def test_keys_are_printed_the_way_kubernetes_prints_them(path: str, key: str | int, expected: str) -> None:
    assert child(path, key) == expected


def test_a_long_key_or_path_is_joined_but_never_remembered() -> None:
    """A hostile review's keys may be megabytes long: remembered, 4,096 of them would stay in memory."""
    errors._remembered.cache_clear()
    child("spec", "podSets")
    assert errors._remembered.cache_info().currsize == 1
    long = "k" * (errors.REMEMBERED_LENGTH + 1)
    assert child("labels", long) == f"labels.{long}"
    assert child(long, "name") == f"{long}.name"
    assert errors._remembered.cache_info().currsize == 1
