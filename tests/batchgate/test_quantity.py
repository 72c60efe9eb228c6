from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate import quantity
from batchgate.quantity import QuantityError, add, format_quantity, parse_quantity, parse_resources, scale


@pytest.mark.parametrize(
    "text, value",
    [("500m", "0.5"), ("2", "2"), ("4Gi", str(4 * 2**30)), ("1k", "1000"), ("1e3", "1000"), (8, "8"), ("0.1", "0.1")],
)
def test_parses_exactly(text: object, value: str) -> None:
    assert parse_quantity(text) == Decimal(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "abc", "1Xi", "--1", True, None, [1]])
def test_rejects_non_quantities(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]


def test_resource_errors_name_the_resource() -> None:
    with pytest.raises(QuantityError, match="^memory: "):
        parse_resources({"cpu": "1", "memory": "lots"})


def test_tenths_of_a_cpu_add_up_exactly() -> None:
    total = add(parse_resources({"cpu": "0.1"}), parse_resources({"cpu": "0.2"}))
    assert total["cpu"] == parse_quantity("300m")
    assert scale(total, 3)["cpu"] == Decimal("0.9")


@pytest.mark.parametrize(
    "value, resource, text",
    [("0.5", "cpu", "500m"), ("2", "cpu", "2"), (str(4 * 2**30), "memory", "4Gi"), ("1000", "memory", "1000")],
)
def test_formats_the_way_users_write(value: str, resource: str, text: str) -> None:
    assert format_quantity(Decimal(value), resource) == text


@given(st.integers(min_value=0, max_value=10**6))
def test_millicores_round_trip(milli: int) -> None:
    value = parse_quantity(f"{milli}m")
    assert parse_quantity(format_quantity(value, "cpu")) == value


def test_only_short_quantity_strings_are_remembered() -> None:
    """A parse is remembered for the strings a cluster repeats, never for a hostile review's long one:
    a remembered value comes back as the same object, one parsed afresh is a new one each time."""
    assert parse_quantity("250m") is parse_quantity("250m")
    assert parse_quantity("250m") == Decimal("0.25")
    long = "1" * (quantity.REMEMBERED_LENGTH + 1)
    assert parse_quantity(long) == Decimal(long)
    assert parse_quantity(long) is not parse_quantity(long)
