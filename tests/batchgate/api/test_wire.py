"""Decoded-JSON helpers against plain recursive definitions, on any JSON Hypothesis makes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batchgate.api.wire import copy_json, nesting_depth

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    """Levels of list/mapping nesting, by definition."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@given(JSON_VALUES, st.integers(min_value=0, max_value=8))
def test_nesting_depth_is_the_depth_or_one_past_the_limit(value: Any, limit: int) -> None:
    assert nesting_depth(value, limit) == min(depth(value), limit + 1)


@given(JSON_VALUES)
def test_a_copy_is_equal_and_shares_no_container(value: Any) -> None:
    copied = copy_json(value)
    assert copied == value
    if isinstance(value, (dict, list)):
        assert copied is not value
