"""metav1.Condition: one type for the conditions of every object we read or write, and one merge rule.

Reading is tolerant (an entry that is not a mapping, or a time that does not parse, is skipped or
left unset): a status is written by controllers, and a bad one must not stop the one reading it.
`merge` is the metav1 rule every status writer here follows: `lastTransitionTime` changes only when
a condition's status flips, so grace periods measured from it survive restarts (docs/architecture.md, "Habits").
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from batchgate.clock import format_time, parse_time
from batchgate.frozen import frozen


@frozen
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: _dt.datetime | None = None
    observed_generation: int | None = None  # kept as read, so rewriting a list does not drop it

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}
        if self.last_transition_time is not None:
            out["lastTransitionTime"] = format_time(self.last_transition_time)
        if self.observed_generation is not None:
            out["observedGeneration"] = self.observed_generation
        return out


def read_conditions(value: Any) -> tuple[Condition, ...]:
    """`status.conditions` as typed values; entries without a string type are skipped."""
    out = []
    for raw in value if isinstance(value, list) else ():
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            continue
        generation = raw.get("observedGeneration")
        out.append(Condition(raw["type"], _text(raw.get("status")), _text(raw.get("reason")),
                             _text(raw.get("message")), _time(raw.get("lastTransitionTime")),
                             generation if isinstance(generation, int) and not isinstance(generation, bool) else None))
    return tuple(out)


def conditions_of(obj: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    """An object's `status.conditions`, read as `read_conditions` does."""
    status = (obj or {}).get("status")
    return read_conditions(status.get("conditions") if isinstance(status, Mapping) else None)


def condition_of(obj: Mapping[str, Any] | None, type_: str) -> Condition | None:
    """The object's condition of `type_`, if it has one."""
    return find(conditions_of(obj), type_)


def is_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    """The object has a condition of `type_` with status "True"."""
    return holds(conditions_of(obj), type_, "True")


def to_wire(conditions: Iterable[Condition]) -> list[dict[str, Any]]:
    """A `status.conditions` list to write."""
    return [c.to_wire() for c in conditions]


def find(conditions: Iterable[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def holds(conditions: Iterable[Condition], type_: str, status: str) -> bool:
    found = find(conditions, type_)
    return found is not None and found.status == status


def merge(current: Sequence[Condition], wanted: Iterable[Condition], now: _dt.datetime) -> tuple[Condition, ...]:
    """`current` with `wanted` applied in place (new types appended); a later wanted entry of a type wins.

    A condition keeps its transition time while its status stays the same, else it is stamped `now`.
    """
    out = list(current)
    last = {want.type: want for want in wanted}
    for want in last.values():
        old = find(out, want.type)
        keep = old is not None and old.status == want.status and old.last_transition_time is not None
        new = replace(want, last_transition_time=old.last_transition_time if keep and old else now)
        if old is None:
            out.append(new)
        else:
            out[out.index(old)] = new
    return tuple(out)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _time(value: Any) -> _dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None
