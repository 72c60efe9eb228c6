"""Reading and updating `status.conditions` of wire objects (metav1.Condition semantics)."""

from __future__ import annotations

from typing import Any, Mapping


def condition(obj: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def is_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def merge_conditions(obj: Mapping[str, Any], updates: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The object's conditions with `updates` applied; a condition keeps its transition time unless its status flips."""
    current = [dict(c) for c in ((obj.get("status") or {}).get("conditions") or [])]
    by_type = {c.get("type"): c for c in current}
    for update in updates:
        old = by_type.get(update["type"])
        new = dict(update)
        if old is not None and old.get("status") == new["status"] and old.get("lastTransitionTime"):
            new["lastTransitionTime"] = old["lastTransitionTime"]
        if old is None:
            current.append(new)
        else:
            current[current.index(old)] = new
        by_type[new["type"]] = new
    return current
