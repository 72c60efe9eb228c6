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

from localcluster.apiserver.patching.fieldsets import (
    MISSING,
    OBJECT,
    ApplyError,
    Node,
    Path,
    child_node,
    field_values,
    from_fields_v1,
    get,
    item_key,
    list_kind,
    remove,
    root_node,
    show,
    to_fields_v1,
)

__all__ = ["ApplyConflict", "ApplyError", "apply", "record_update"]

KUBECTL = "kubectl"  # the manager kube-apiserver treats as the client-side apply upgrade path
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class ApplyConflict(Exception):
    """Fields the applier would change that other managers own: a 409 listing them."""

    def __init__(self, conflicts: list[tuple[str, str]], status: dict[str, Any]) -> None:
        super().__init__(status["message"])
        self.conflicts = conflicts
        self.status = status


def apply(live: dict[str, Any] | None, applied: dict[str, Any], manager: str, force: bool, now_iso: str,
          kind_key: str, subresource: str = "", schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object after `manager` applies `applied` to `live` (None creates it).

    On the main resource status is not applied (the strategy resets it); on the `status`
    subresource only status is. `schema` (a CRD version's openAPIV3Schema) keys custom
    resources' lists by their `x-kubernetes-list-type`.
    """
    config = _configuration(applied, live, subresource)
    wanted_values = field_values(config, kind_key, maps_are_members=False, schema=schema)
    wanted = set(wanted_values)
    entries = _entries(live)
    mine = _identity(manager, "Apply", subresource)
    if live is None:
        result = config
    else:
        live_values = _live_values(live, kind_key, wanted, schema)
        changed = {path for path, value in wanted_values.items() if live_values.get(path, MISSING) != value}
        conflicts = [(path, entry) for entry, owned in entries if _identity_of(entry) != mine
                     for path in sorted(changed & owned)]
        if conflicts and not force:
            allowed = _client_side_applied_fields(manager, live, kind_key, schema)
            refused = [(path, entry) for path, entry in conflicts if path not in allowed]
            if refused:
                raise _conflict_error(refused)
        taken = {path for path, _ in conflicts}
        entries = [(entry, owned - taken) for entry, owned in entries]
        result = _merge(copy.deepcopy(live), config, root_node(kind_key, schema))
        _drop_released(result, entries, mine, wanted)
        if manager == KUBECTL and not subresource and _last_applied(live) is not None:
            _sync_last_applied(result, applied)
        unchanged = _without_fields(result) == _without_fields(live)
        if unchanged and any(_identity_of(e) == mine and owned == wanted for e, owned in entries):
            _store(result, entries)  # a no-op apply keeps its time, so nothing is written
            return result
    _record(result, entries, mine, applied.get("apiVersion", ""), now_iso, wanted)
    return result


def _configuration(applied: Any, live: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
    """The part of an applied configuration this request may set."""
    if not isinstance(applied, dict):
        raise ApplyError("an applied configuration must be an object")
    config = copy.deepcopy(applied)
    if subresource == "status":
        if live is None:
            raise ApplyError("the status of an object that does not exist cannot be applied")
        config = {key: config[key] for key in ("apiVersion", "kind", "metadata", "status") if key in config}
        config["metadata"] = {k: v for k, v in (config.get("metadata") or {}).items() if k in ("name", "namespace")}
    else:
        config.pop("status", None)
    if isinstance(config.get("metadata"), dict):
        config["metadata"].pop("managedFields", None)
    return config


def _drop_released(result: dict[str, Any], entries: list[tuple[dict[str, Any], set[Path]]],
                   mine: tuple[str, str, str], wanted: set[Path]) -> None:
    """Remove what the applier owned before and no longer sends, unless another manager owns it."""
    previous = next((owned for entry, owned in entries if _identity_of(entry) == mine), set())
    others = set().union(*(owned for entry, owned in entries if _identity_of(entry) != mine))
    for path in sorted(previous - wanted - others, key=len):  # an item before its fields
        if not any(other[:len(path)] == path for other in others):
            remove(result, path)


def _last_applied(obj: dict[str, Any]) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    return value if isinstance(value, str) and value else None


def _client_side_applied_fields(manager: str, live: dict[str, Any], kind_key: str,
                                schema: dict[str, Any] | None) -> set[Path]:
    """The fields kube-apiserver lets `kubectl apply --server-side` take without conflict: those the
    last client-side apply (its annotation) configured and that still hold the value it set, so
    switching modes is no conflict, while a field another writer changed since (a caBundle a
    keeper injected, an admin's edit) still is (its lastAppliedManager)."""
    text = _last_applied(live)
    if manager != KUBECTL or text is None:
        return set()
    try:
        last = json.loads(text)
        if not isinstance(last, dict):
            return set()
        configured = field_values(last, kind_key, False, schema)
        current = _live_values(live, kind_key, set(configured), schema)
    except (ValueError, ApplyError):
        return set()
    return {path for path, value in configured.items() if current.get(path, MISSING) == value}


def _sync_last_applied(result: dict[str, Any], applied: dict[str, Any]) -> None:
    """kubectl's server-side applies keep an existing last-applied annotation current, so that going
    back to client-side apply computes the right patches."""
    config = copy.deepcopy(applied)
    annotations = (config.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            del config["metadata"]["annotations"]
    result.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = json.dumps(
        config, sort_keys=True, separators=(",", ":"))


def record_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now_iso: str,
                  kind_key: str, subresource: str = "", schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """`new` with managedFields updated for an ordinary write (create, update, patch) by `manager`.

    Like the apiserver's UpdateNoErrors, it never fails the write: an object whose lists cannot be
    keyed keeps the managedFields it had.
    """
    result = {**new, "metadata": dict(new.get("metadata") or {})}
    try:
        before = field_values(old, kind_key, True, schema) if old else {}
        after = field_values(new, kind_key, True, schema)
    except ApplyError:
        _store(result, _entries(old))
        return result
    changed = {path for path, value in after.items() if before.get(path, MISSING) != value}
    gone = before.keys() - after.keys()
    entries = _entries(old if old is not None else new)
    mine = _identity(manager, "Update", subresource)
    previous = next((owned for entry, owned in entries if _identity_of(entry) == mine), set())
    entries = [(entry, owned - changed - gone) for entry, owned in entries if _identity_of(entry) != mine] + \
              [(entry, owned) for entry, owned in entries if _identity_of(entry) == mine]
    owned = (previous - gone) | changed
    if not changed and previous == owned and any(_identity_of(e) == mine for e, _ in entries):
        _store(result, entries)
        return result
    _record(result, entries, mine, new.get("apiVersion", ""), now_iso, owned)
    return result


def _merge(live: Any, config: Any, node: Node) -> Any:
    """Merge an applied configuration into the live object: objects by field, list-maps by key,
    sets by value; atomic lists and scalars are taken from the configuration."""
    if not isinstance(live, dict) or not isinstance(config, dict):
        return copy.deepcopy(config)
    for name, value in config.items():
        current = live.get(name, MISSING)
        if isinstance(value, dict) and isinstance(current, dict):
            live[name] = _merge(current, value, child_node(node, name))
        elif isinstance(value, list) and isinstance(current, list):
            live[name] = _merge_list(current, value, node, name)
        else:
            live[name] = copy.deepcopy(value)
    return live


def _merge_list(live: list[Any], config: list[Any], node: Node, name: str) -> list[Any]:
    kind = list_kind(node, name)
    if kind.kind == "atomic":
        return copy.deepcopy(config)
    if kind.kind == "set":
        return live + [copy.deepcopy(v) for v in config if v not in live]
    result = list(live)
    for index, item in enumerate(config):
        key = item_key(item, kind.keys, (f"f:{name}",), index)
        position = next((i for i, existing in enumerate(result) if isinstance(existing, dict)
                         and all(existing.get(k, v if k == "protocol" else MISSING) == v for k, v in key.items())),
                        None)
        if position is None:
            result.append(copy.deepcopy(item))
        else:
            result[position] = _merge(result[position], item, kind.element)
    return result


def _live_values(live: dict[str, Any], kind_key: str, paths: set[Path],
                 schema: dict[str, Any] | None) -> dict[Path, Any]:
    """The live object's values at `paths`; found one by one if its own lists cannot be keyed."""
    try:
        return field_values(live, kind_key, True, schema)
    except ApplyError:
        found = {path: get(live, path) for path in paths}
        return {path: OBJECT if isinstance(value, dict) and value else value for path, value in found.items()}


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


def _record(result: dict[str, Any], entries: list[tuple[dict[str, Any], set[Path]]], mine: tuple[str, str, str],
            api_version: str, now_iso: str, owned: set[Path]) -> None:
    """Store the managedFields with the writer's entry (`mine`: manager, operation, subresource) now
    owning `owned`, in the place its previous entry had."""
    manager, operation, subresource = mine
    entry = {"manager": manager, "operation": operation, "apiVersion": api_version,
             "time": now_iso, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(owned)}
    if subresource:
        entry["subresource"] = subresource
    _store(result, _replace(entries, mine, entry, owned))


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
    """Worded as kube-apiserver's NewConflictError. It names a manager by its identifier, which
    never holds the time (BuildManagerIdentifier drops it), so no "at <time>" is ever printed."""
    def who(entry: dict[str, Any]) -> str:
        text = json.dumps(entry.get("manager", ""))
        if entry.get("subresource"):
            text += f" with subresource {json.dumps(entry['subresource'])}"
        if entry.get("operation") == "Update":
            text += f" using {entry.get('apiVersion', '')}"
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
