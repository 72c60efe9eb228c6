"""Go's strconv.Atoi, as upstream reads retryLimit and exit codes (appwrapper_controller.go)."""

from __future__ import annotations

import pytest

from batchgate.go_numbers import NumberError, atoi, int32


@pytest.mark.parametrize("text, value", [
    pytest.param("0", 0, id="zero"), pytest.param("42", 42, id="digits"), pytest.param("+7", 7, id="a plus sign"),
    pytest.param("-3", -3, id="a minus sign"), pytest.param("007", 7, id="leading zeros"),
    pytest.param("9223372036854775807", 2**63 - 1, id="the largest int64"),
])
def test_atoi_accepts_what_go_accepts(text: str, value: int) -> None:
    assert atoi(text) == value


@pytest.mark.parametrize("text, reason", [
    pytest.param(" 0", "blanks around the value are not allowed", id="a leading blank"),
    pytest.param("4 ", "blanks around the value are not allowed", id="a trailing blank"),
    pytest.param("1_000", "is not an integer", id="underscores"), pytest.param("2.5", "is not an integer", id="a fraction"),
    pytest.param("", "is not an integer", id="nothing"), pytest.param("+", "is not an integer", id="a bare sign"),
    pytest.param("٣", "is not an integer", id="a non-ASCII digit"),
    pytest.param("9223372036854775808", "out of range", id="one past int64"),
    pytest.param(3, "written as a string", id="not a string"),
])
def test_atoi_rejects_what_go_rejects(text: object, reason: str) -> None:
    with pytest.raises(NumberError, match=reason):
        atoi(text)


@pytest.mark.parametrize("value, wrapped", [(1, 1), (2**31 - 1, 2**31 - 1), (2**31, -(2**31)), (2**32 + 1, 1), (-1, -1)])
def test_int32_wraps_as_go_converts(value: int, wrapped: int) -> None:
    assert int32(value) == wrapped
