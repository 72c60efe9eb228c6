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
    """A hostile review's keys may be megabytes long: remembered, 4,096 of them would stay in memory.
    A remembered path comes back as the same string object; one joined afresh is a new one each time
    (other threads of the suite may use the cache meanwhile, so its size is not what is checked)."""
    assert child("spec", "podSets") is child("spec", "podSets")
    long = "k" * (errors.REMEMBERED_LENGTH + 1)
    assert child("labels", long) == f"labels.{long}"
    assert child("labels", long) is not child("labels", long)
    assert child(long, "name") == f"{long}.name"
    assert child(long, "name") is not child(long, "name")
