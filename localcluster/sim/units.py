"""Go durations, Kubernetes quantities and timestamps, for the simulation only.

`localcluster/` plays Kubernetes and may not import the product, so it keeps its own small
parsers: behaviour annotations use Go durations (`2s`, `1m30s`) and node capacities quantities.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation

from kubernetes.utils.quantity import parse_quantity as _parse_quantity

UTC = dt.timezone.utc
_UNIT_SECONDS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


class UnitError(ValueError):
    """A duration or quantity that does not parse; the message names the text."""


def parse_duration(text: object) -> dt.timedelta:
    """Parse a non-negative Go duration such as `90s`, `1m30s`, `1.5h`, `300ms` or `0`."""
    if not isinstance(text, str):
        raise UnitError(f"duration must be a string like \"30s\", got {text!r}")
    body = text.strip()
    if body == "0":
        return dt.timedelta(0)
    if not body:
        raise UnitError("duration must not be empty")
    total, pos = Decimal(0), 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if not match:
            raise UnitError(f"invalid duration {text!r}: expected forms like 30s, 1m30s, 1.5h")
        total += Decimal(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    return dt.timedelta(seconds=float(total))


def parse_quantity(value: object, what: str = "quantity") -> Decimal:
    """Parse `500m`, `4Gi`, `8` exactly; the error names `what` and the bad text."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise UnitError(f"{what}: invalid quantity {value!r}")
    try:
        return Decimal(_parse_quantity(value))
    except (ValueError, TypeError, ArithmeticError, InvalidOperation):
        raise UnitError(f"{what}: invalid quantity {value!r}") from None


def format_time(instant: dt.datetime) -> str:
    """metav1.Time: RFC 3339, second precision, `Z`."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(instant: dt.datetime) -> str:
    """metav1.MicroTime, as Leases and events.k8s.io write it."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)
