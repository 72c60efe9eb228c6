"""Go `time.ParseDuration` syntax, the form every Kubernetes and AppWrapper duration uses.

`90s`, `1m30s`, `1.5h`, `300ms`, `-2s`, `0`. Kept exact with Decimal so `0.1s` is 100 ms.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal

_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
MAX_SECONDS = Decimal(2**63 - 1) * Decimal("1e-9")
"""Go durations are int64 nanoseconds: about 292 years. Longer ones are errors there and here."""
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """A string that is not a Go duration."""


def parse_duration(text: str) -> _dt.timedelta:
    """Parse exactly what Go's `time.ParseDuration` parses; raise DurationError with the reason otherwise.

    Nothing is trimmed: `" 2s"` is invalid in Go, so upstream ignores such an annotation and we
    must not read it differently.
    """
    if not isinstance(text, str):
        raise DurationError(f"duration must be a string like '90s', got {type(text).__name__}")
    if text != text.strip():
        raise DurationError(f"invalid duration {text!r}: blanks around the value are not allowed")
    body = text
    sign = Decimal(1)
    if body[:1] in ("+", "-"):
        sign = Decimal(-1) if body[0] == "-" else Decimal(1)
        body = body[1:]
    if body == "0":
        return _dt.timedelta(0)
    if not body:
        raise DurationError(f"invalid duration {text!r}")
    pos = 0
    total = Decimal(0)
    while pos < len(body):
        match = _PART.match(body, pos)
        if not match:
            raise DurationError(f"invalid duration {text!r}: expected forms like 90s, 1m30s, 1.5h")
        total += Decimal(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if total > MAX_SECONDS:
        raise DurationError(f"invalid duration {text[:40]!r}: out of range (at most about 292 years)")
    return _dt.timedelta(seconds=float(sign * total))


def format_duration(delta: _dt.timedelta) -> str:
    """Format like Go's Duration.String for whole seconds and above (`1h30m0s`, `90ms`)."""
    micros = round(delta.total_seconds() * 1_000_000)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros < 1_000_000:
        if micros % 1000 == 0:
            return f"{sign}{micros // 1000}ms"
        return f"{sign}{micros}µs"
    seconds, frac = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    sec_text = f"{secs}" if not frac else f"{secs}.{frac:06d}".rstrip("0")
    out = ""
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return f"{sign}{out}{sec_text}s"


def human_duration(delta: _dt.timedelta) -> str:
    """An age as kubectl prints it (apimachinery's HumanDuration): `45s`, `3m20s`, `5h`, `12d`.
    The stand-in API server's table printer has its own copy: the test beds import nothing of the product."""
    seconds = delta.total_seconds()
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    m, h = s // 60, s // 3600
    if s < 120:
        return f"{s}s"
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    days = h // 24
    if h < 24 * 8:
        return f"{days}d{h % 24}h" if h % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"
