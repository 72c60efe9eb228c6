"""Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds.

It is a JSON merge patch that knows, from patch_meta, which lists merge by a key (containers by
name, ports by containerPort, ...) and understands the directives kubectl writes: `$patch`
(replace, delete), `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
`$setElementOrder/<field>`. A null value deletes a field.
"""

from __future__ import annotations

import copy
from typing import Any

from localcluster.apiserver.patching.patch_meta import Meta, field_meta, root_type

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM = "$deleteFromPrimitiveList/"
ELEMENT_ORDER = "$setElementOrder/"


class PatchError(ValueError):
    """A patch that cannot be applied; the server answers 422 with this message."""


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], kind_key: str) -> dict[str, Any]:
    """Apply `patch` to a copy of `original`, an object of `kind_key` such as `apps/v1/Deployment`."""
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    if not isinstance(original, dict):
        raise PatchError("the object to patch must be a JSON object")
    if patch.get(PATCH) == "delete":
        raise PatchError('the patch deletes the whole object ("$patch": "delete" at the top level)')
    return _merge_map(copy.deepcopy(original), patch, root_type(kind_key), path="")


def _merge_map(original: dict[str, Any], patch: dict[str, Any], type_name: str | None,
               path: str) -> dict[str, Any]:
    directive = patch.get(PATCH)
    if directive == "delete":
        return {}
    if directive == "replace":
        return _clean({k: v for k, v in patch.items() if k != PATCH})
    if directive is not None:
        raise PatchError(f"{_where(path)}: unknown patch type: {directive!r} in map")
    retain = patch.get(RETAIN_KEYS)
    if retain is not None:
        _check_retain_keys(retain, patch, path)
    orders = {key[len(ELEMENT_ORDER):]: _list(value, path, key)
              for key, value in patch.items() if key.startswith(ELEMENT_ORDER)}
    for key, value in patch.items():
        if key in (PATCH, RETAIN_KEYS) or key.startswith(ELEMENT_ORDER):
            continue
        if key.startswith(DELETE_FROM):
            field = key[len(DELETE_FROM):]
            doomed = _list(value, path, key)
            if isinstance(original.get(field), list):
                original[field] = [item for item in original[field] if item not in doomed]
            continue
        _merge_field(original, key, value, field_meta(type_name, key), _join(path, key), orders.get(key))
    for field, order in orders.items():
        meta = field_meta(type_name, field)
        if field not in patch and meta.merge and isinstance(original.get(field), list):
            original[field] = _normalize_order(original[field], original[field], order, meta.key)
    if retain is not None:
        for key in [k for k in original if k not in retain]:
            del original[key]
    return original


def _merge_field(target: dict[str, Any], key: str, value: Any, meta: Meta, path: str,
                 order: list[Any] | None) -> None:
    if value is None:
        target.pop(key, None)
        return
    current = target.get(key)
    if isinstance(value, dict):
        target[key] = _merge_map(current if isinstance(current, dict) else {}, value, meta.type, path)
    elif isinstance(value, list) and meta.merge:
        target[key] = _merge_list(current if isinstance(current, list) else [], value, meta, path, order)
    else:
        target[key] = _clean(value)


def _merge_list(original: list[Any], patch: list[Any], meta: Meta, path: str,
                order: list[Any] | None) -> list[Any]:
    if order is not None:
        _check_order(patch, order, meta.key, path)
    found = [item[PATCH] for item in patch if isinstance(item, dict) and item.get(PATCH) is not None]
    if any(not isinstance(directive, str) for directive in found):
        raise PatchError(f"{_where(path)}: a $patch directive must be a string")
    directives = set(found)
    if "merge" in directives:
        raise PatchError(f"{_where(path)}: merging lists cannot yet be specified in the patch")
    if directives - {"replace", "delete"}:
        raise PatchError(f"{_where(path)}: unknown patch type: {sorted(directives)[0]!r} in list")
    if "replace" in directives:
        return [_clean(item) for item in patch if not (isinstance(item, dict) and item.get(PATCH) == "replace")]
    if meta.key is None:
        if any(isinstance(item, (dict, list)) for item in patch):
            raise PatchError(f"{_where(path)}: a merging list without a merge key must hold plain values")
        merged: list[Any] = []
        for item in original + patch:
            if item not in merged:
                merged.append(item)
        return _normalize_order(merged, original, order if order is not None else patch, None)
    merged = list(original)
    for index, item in enumerate(patch):
        if not isinstance(item, dict):
            raise PatchError(f"{_where(path)}[{index}]: expected an object with merge key {meta.key!r}")
        if meta.key not in item:
            raise PatchError(f"{_where(path)}[{index}]: map does not contain declared merge key: {meta.key}")
        position = next((i for i, existing in enumerate(merged)
                         if isinstance(existing, dict) and existing.get(meta.key) == item[meta.key]), None)
        if item.get(PATCH) == "delete":
            if position is not None:
                del merged[position]
            continue
        if position is None:
            merged.append(_clean(item))  # a new item is taken whole, as the apiserver appends it
        else:
            merged[position] = _merge_map(merged[position], item, meta.type, f"{path}[{index}]")
    live = [item for item in patch if not (isinstance(item, dict) and item.get(PATCH) == "delete")]
    return _normalize_order(merged, original, order if order is not None else live, meta.key)


def _normalize_order(merged: list[Any], original: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Order as the apiserver does: $setElementOrder (or the patch list) first, live order for the rest.

    Items named by `order` are sorted by it; the others keep their live order; the two runs are
    then interleaved, an unnamed item going first only when both sit in the live list before.
    """
    def identity(item: Any) -> Any:
        return item.get(key) if key is not None and isinstance(item, dict) else item

    wanted = [identity(entry) for entry in order]
    live = [identity(item) for item in original]
    named = sorted((i for i in merged if identity(i) in wanted), key=lambda i: wanted.index(identity(i)))
    others = [i for i in merged if identity(i) not in wanted]
    result: list[Any] = []
    while named or others:
        if not named or (others and identity(others[0]) in live and identity(named[0]) in live
                         and live.index(identity(others[0])) < live.index(identity(named[0]))):
            result.append(others.pop(0))
        else:
            result.append(named.pop(0))
    return result


def _clean(value: Any) -> Any:
    """A value taken whole, as the typed object a real server decodes it into: no nulls, no directives."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None and not k.startswith("$")}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def _check_order(patch: list[Any], order: list[Any], key: str | None, path: str) -> None:
    """The patch list's items (deletions aside) must appear in $setElementOrder, in its order."""
    def identity(item: Any) -> Any:
        return item.get(key) if key is not None and isinstance(item, dict) else item

    items = [item for item in patch if not (isinstance(item, dict) and PATCH in item)]
    position = 0
    for entry in order:
        if position < len(items) and identity(items[position]) == identity(entry):
            position += 1
    if order and position < len(items):
        raise PatchError(f"{_where(path)}: the order in the patch list doesn't match the $setElementOrder list")


def _check_retain_keys(retain: Any, patch: dict[str, Any], path: str) -> None:
    if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
        raise PatchError(f"{_where(path)}: $retainKeys must be a list of field names")
    for key, value in patch.items():
        if key.startswith("$") or value is None:
            continue
        if key not in retain:
            raise PatchError(f"{_where(path)}: field {key!r} is set but not listed in $retainKeys")


def _list(value: Any, path: str, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise PatchError(f"{_where(path)}: {key} must be a list")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _where(path: str) -> str:
    return path or "the patch"
