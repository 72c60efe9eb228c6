"""Server-side apply (`application/apply-patch+yaml`) and the managedFields every write keeps.

An applier owns exactly the fields of its last applied configuration. Applying merges those
fields into the live object, drops fields the applier owned before and no longer sends (unless
another manager owns them too), and refuses to change a field another manager owns unless forced.
Ordinary writes (`record_update`) take ownership of what they changed, without conflicts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from localcluster.patching.fieldsets import (
    MISSING,
    ApplyError,
    Path,
    field_set,
    from_fields_v1,
    get,
    item_key,
    list_kind,
    remove,
    show,
    to_fields_v1,
)
from localcluster.patching.patch_meta import field_meta, root_type

__all__ = ["ApplyConflict", "ApplyError", "apply", "record_update"]


class ApplyConflict(Exception):
    """Fields the applier would change that other managers own: a 409 listing them."""

    def __init__(self, conflicts: list[tuple[str, str]], status: dict[str, Any]) -> None:
        super().__init__(status["message"])
        self.conflicts = conflicts
        self.status = status


def apply(live: dict[str, Any] | None, applied: dict[str, Any], manager: str, force: bool, now_iso: str,
          kind_key: str) -> dict[str, Any]:
    """The object after `manager` applies `applied` to `live` (None creates it)."""
    if not isinstance(applied, dict):
        raise ApplyError("an applied configuration must be an object")
    root = root_type(kind_key)
    config = {k: v for k, v in copy.deepcopy(applied).items()}
    config.get("metadata", {}).pop("managedFields", None)
    config.pop("status", None)  # the main resource's apply never sets status (the strategy resets it)
    wanted = field_set(config, kind_key, maps_are_members=False)
    entries = _entries(live)
    mine = _identity(manager, "Apply")
    if live is None:
        result = config
    else:
        result = _merge(copy.deepcopy(live), config, root)
        changed = {path for path in wanted if _differs(live, config, path)}
        conflicts = [(path, entry) for entry, owned in entries if _identity_of(entry) != mine
                     for path in sorted(changed & owned)]
        if conflicts and not force:
            raise _conflict_error(conflicts)
        taken = {path for path, _ in conflicts}
        entries = [(entry, owned - taken) for entry, owned in entries]
        previous = next((owned for entry, owned in entries if _identity_of(entry) == mine), set())
        others = set().union(*(owned for entry, owned in entries if _identity_of(entry) != mine))
        for path in sorted(previous - wanted - others, key=len, reverse=True):
            if not any(other[:len(path)] == path for other in others):
                remove(result, path)
    previous_entry = next((entry for entry, owned in entries if _identity_of(entry) == mine and owned == wanted), None)
    if previous_entry is not None and live is not None and _without_fields(result) == _without_fields(live):
        _store(result, entries)  # nothing changed: a no-op apply keeps its time, so nothing is written
        return result
    entry = {"manager": manager, "operation": "Apply", "apiVersion": applied.get("apiVersion", ""),
             "time": now_iso, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(wanted)}
    _store(result, _replace(entries, mine, entry, wanted))
    return result


def record_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now_iso: str,
                  kind_key: str, subresource: str = "") -> dict[str, Any]:
    """`new` with managedFields updated for an ordinary write (create, update, patch) by `manager`.

    Like the apiserver's UpdateNoErrors, it never fails the write: an object whose lists cannot be
    keyed keeps the managedFields it had.
    """
    try:
        before = field_set(_without_fields(old), kind_key, maps_are_members=True) if old else set()
        after = field_set(_without_fields(new), kind_key, maps_are_members=True)
    except ApplyError:
        result = copy.deepcopy(new)
        _store(result, _entries(old))
        return result
    changed = {path for path in after if path not in before or _differs(old, new, path)}
    gone = before - after
    entries = _entries(old if old is not None else new)
    mine = _identity(manager, "Update", subresource)
    previous = next((owned for entry, owned in entries if _identity_of(entry) == mine), set())
    entries = [(entry, owned - changed - gone) for entry, owned in entries if _identity_of(entry) != mine] + \
              [(entry, owned) for entry, owned in entries if _identity_of(entry) == mine]
    result = copy.deepcopy(new)
    owned = (previous - gone) | changed
    if not changed and previous == owned and any(_identity_of(e) == mine for e, _ in entries):
        _store(result, entries)
        return result
    entry = {"manager": manager, "operation": "Update", "apiVersion": new.get("apiVersion", ""),
             "time": now_iso, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(owned)}
    if subresource:
        entry["subresource"] = subresource
    _store(result, _replace(entries, mine, entry, owned))
    return result


def _merge(live: Any, config: Any, type_name: str | None) -> Any:
    """Merge an applied configuration into the live object: objects by field, list-maps by key,
    sets by value; atomic lists and scalars are taken from the configuration."""
    if not isinstance(live, dict) or not isinstance(config, dict):
        return copy.deepcopy(config)
    for name, value in config.items():
        meta = field_meta(type_name, name)
        current = live.get(name, MISSING)
        if isinstance(value, dict) and isinstance(current, dict):
            live[name] = _merge(current, value, meta.type)
        elif isinstance(value, list) and isinstance(current, list):
            live[name] = _merge_list(current, value, type_name, name)
        else:
            live[name] = copy.deepcopy(value)
    return live


def _merge_list(live: list[Any], config: list[Any], type_name: str | None, name: str) -> list[Any]:
    kind = list_kind(type_name, name)
    if kind.kind == "atomic":
        return copy.deepcopy(config)
    if kind.kind == "set":
        return live + [copy.deepcopy(v) for v in config if v not in live]
    result = list(live)
    for index, item in enumerate(config):
        key = item_key(item, kind.keys, f".{name}[{index}]")
        position = next((i for i, existing in enumerate(result) if isinstance(existing, dict)
                         and all(existing.get(k, v if k == "protocol" else MISSING) == v for k, v in key.items())),
                        None)
        if position is None:
            result.append(copy.deepcopy(item))
        else:
            result[position] = _merge(result[position], item, kind.element_type)
    return result


def _differs(old: Any, new: Any, path: Path) -> bool:
    before, after = get(old, path), get(new, path)
    if isinstance(after, dict) and after and isinstance(before, dict):
        return False  # an object that exists on both sides: only its fields can differ
    return before != after


def _entries(obj: dict[str, Any] | None) -> list[tuple[dict[str, Any], set[Path]]]:
    if not obj:
        return []
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return [(entry, from_fields_v1(entry.get("fieldsV1"))) for entry in entries if isinstance(entry, dict)]


def _identity(manager: str, operation: str, subresource: str = "") -> tuple[str, str, str]:
    return manager, operation, subresource


def _identity_of(entry: dict[str, Any]) -> tuple[str, str, str]:
    return entry.get("manager", ""), entry.get("operation", ""), entry.get("subresource", "")


def _replace(entries: list[tuple[dict[str, Any], set[Path]]], mine: tuple[str, str, str], entry: dict[str, Any],
             owned: set[Path]) -> list[tuple[dict[str, Any], set[Path]]]:
    kept = [(e, o) for e, o in entries if _identity_of(e) != mine]
    position = next((i for i, (e, _) in enumerate(entries) if _identity_of(e) == mine), len(kept))
    kept.insert(min(position, len(kept)), (entry, owned))
    return kept


def _store(obj: dict[str, Any], entries: list[tuple[dict[str, Any], set[Path]]]) -> None:
    managed = []
    for entry, owned in entries:
        if not owned:
            continue
        managed.append({**entry, "fieldsV1": to_fields_v1(owned)})
    metadata = obj.setdefault("metadata", {})
    if managed:
        metadata["managedFields"] = managed
    else:
        metadata.pop("managedFields", None)


def _without_fields(obj: dict[str, Any]) -> dict[str, Any]:
    trimmed = dict(obj)
    if isinstance(obj.get("metadata"), dict):
        trimmed["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return trimmed


def _conflict_error(conflicts: list[tuple[Path, dict[str, Any]]]) -> ApplyConflict:
    """Worded as kube-apiserver's NewConflictError."""
    def who(entry: dict[str, Any]) -> str:
        text = json.dumps(entry.get("manager", ""))
        if entry.get("subresource"):
            text += f" with subresource {json.dumps(entry['subresource'])}"
        if entry.get("operation") == "Update":
            text += f" using {entry.get('apiVersion', '')}"
            if entry.get("time"):
                text += f" at {entry['time']}"
        return text

    if len(conflicts) == 1:
        path, entry = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {who(entry)}: {show(path)}"
    else:
        lines = []
        by_manager: dict[str, list[Path]] = {}
        for path, entry in conflicts:
            by_manager.setdefault(who(entry), []).append(path)
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {show(path)}" for path in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
              "reason": "Conflict", "code": 409,
              "details": {"causes": [{"reason": "FieldManagerConflict", "message": f"conflict with {who(entry)}",
                                      "field": show(path)} for path, entry in conflicts]}}
    return ApplyConflict([(show(path), entry.get("manager", "")) for path, entry in conflicts], status)
