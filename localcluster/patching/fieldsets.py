"""Field sets as managedFields hold them (fieldsV1): paths of `f:<field>`, `k:{<list-map keys>}`
and `v:<set value>` tokens, plus how each list of a built-in type is keyed for server-side apply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localcluster.patching.patch_meta import field_meta, is_builtin, root_type

Path = tuple[str, ...]
MISSING = object()

# list-map keys where server-side apply keys a list by more than the strategic-merge key.
SSA_KEYS = {
    ("Container", "ports"): ("containerPort", "protocol"),
    ("ServiceSpec", "ports"): ("port", "protocol"),
    ("PodSpec", "topologySpreadConstraints"): ("topologyKey", "whenUnsatisfiable"),
}
KEY_DEFAULTS = {"protocol": "TCP"}
# Fields of built-in kinds that hold Go maps or pointers, so they are members of a set in their own
# right when they appear; other nested objects of built-ins are plain structs.
MAP_FIELDS = {"labels", "annotations", "data", "binaryData", "stringData", "nodeSelector", "matchLabels",
              "selector", "limits", "requests", "hard", "rollingUpdate", "resources"}
# System fields no manager owns.
IGNORED: set[Path] = {("f:apiVersion",), ("f:kind",)} | {
    ("f:metadata", f"f:{name}") for name in ("name", "namespace", "uid", "resourceVersion", "generation",
                                             "creationTimestamp", "deletionTimestamp",
                                             "deletionGracePeriodSeconds", "managedFields", "selfLink")}


class ApplyError(ValueError):
    """An applied configuration that cannot be turned into a field set (e.g. a list item without its key)."""


@dataclass(frozen=True)
class ListKind:
    kind: str  # "map" | "set" | "atomic"
    keys: tuple[str, ...] = ()
    element_type: str | None = None


def list_kind(type_name: str | None, field: str) -> ListKind:
    meta = field_meta(type_name, field)
    if not meta.merge:
        return ListKind("atomic")
    if meta.key is None:
        return ListKind("set")
    return ListKind("map", SSA_KEYS.get((type_name or "", field), (meta.key,)), meta.type)


def item_key(item: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ApplyError(f"{where}: expected an object in an associative list keyed by {', '.join(keys)}")
    found = {}
    for key in keys:
        if key in item:
            found[key] = item[key]
        elif key in KEY_DEFAULTS:
            found[key] = KEY_DEFAULTS[key]
        else:
            raise ApplyError(f'{where}: associative list with keys has an element that omits key field "{key}" '
                             "(and doesn't have default value)")
    return found


def key_token(key: dict[str, Any]) -> str:
    return "k:" + json.dumps(key, separators=(",", ":"), sort_keys=True)


def value_token(value: Any) -> str:
    return "v:" + json.dumps(value, separators=(",", ":"))


def field_set(obj: dict[str, Any], kind_key: str, maps_are_members: bool) -> set[Path]:
    """Every owned path of `obj`: leaves, list items, and (for updates) map-like objects themselves."""
    out: set[Path] = set()
    _walk_map(obj, root_type(kind_key), (), out, maps_are_members, custom=not is_builtin(kind_key))
    out.discard(("f:metadata",))
    return {path for path in out if not any(path[:len(ignored)] == ignored for ignored in IGNORED)}


def _walk_map(obj: dict[str, Any], type_name: str | None, path: Path, out: set[Path], members: bool,
              custom: bool) -> None:
    for name, value in obj.items():
        child = path + (f"f:{name}",)
        meta = field_meta(type_name, name)
        if isinstance(value, dict) and value:
            if members and (custom or name in MAP_FIELDS):
                out.add(child)
            _walk_map(value, meta.type, child, out, members, custom)
        elif isinstance(value, list):
            kind = list_kind(type_name, name)
            if kind.kind == "atomic":
                out.add(child)
                continue
            seen: set[str] = set()
            for index, item in enumerate(value):
                if kind.kind == "set":
                    token = value_token(item)
                else:
                    token = key_token(item_key(item, kind.keys, f"{_show(child)}[{index}]"))
                if token in seen:
                    raise ApplyError(f"{_show(child)}: duplicate entries for key {token[2:]}")
                seen.add(token)
                out.add(child + (token,))
                if kind.kind == "map":
                    _walk_map(item, kind.element_type, child + (token,), out, members, custom)
        else:
            out.add(child)


def get(obj: Any, path: Path) -> Any:
    """The value at `path`, or MISSING."""
    for token in path:
        obj = _step(obj, token)
        if obj is MISSING:
            return MISSING
    return obj


def _step(obj: Any, token: str) -> Any:
    kind, _, rest = token.partition(":")
    if kind == "f":
        return obj.get(rest, MISSING) if isinstance(obj, dict) else MISSING
    if not isinstance(obj, list):
        return MISSING
    wanted = json.loads(rest)
    for item in obj:
        if kind == "v" and item == wanted:
            return item
        if kind == "k" and isinstance(item, dict) and all(
                item.get(k, KEY_DEFAULTS.get(k, MISSING)) == v for k, v in wanted.items()):
            return item
    return MISSING


def remove(obj: dict[str, Any], path: Path) -> None:
    """Delete the value at `path`, then any object left empty by it."""
    parents = [obj]
    for token in path[:-1]:
        parents.append(_step(parents[-1], token))
        if parents[-1] is MISSING:
            return
    container, last = parents[-1], path[-1]
    target = _step(container, last)
    if target is MISSING:
        return
    if isinstance(container, dict):
        del container[last[2:]]
    else:
        container.remove(target)
    for depth in range(len(path) - 1, 0, -1):
        node = parents[depth]
        if node in ({}, []):
            remove(obj, path[:depth])
            break


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    members: set[int] = set()
    for path in sorted(paths):
        node = tree
        for token in path:
            node = node.setdefault(token, {})
        members.add(id(node))
    _mark(tree, members)
    return tree


def _mark(node: dict[str, Any], members: set[int]) -> None:
    for token, child in list(node.items()):
        _mark(child, members)
        if child and id(child) in members:
            node[token] = {".": {}, **child}


def from_fields_v1(tree: Any, path: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for token, child in tree.items():
        if token == ".":
            out.add(path)
        elif isinstance(child, dict) and child:
            out |= from_fields_v1(child, path + (token,))
        else:
            out.add(path + (token,))
    return out


def _show(path: Path) -> str:
    return show(path) or "."


def show(path: Path) -> str:
    """A path as Kubernetes prints it in conflicts: `.spec.containers[name="app"].image`."""
    parts = []
    for token in path:
        kind, _, rest = token.partition(":")
        if kind == "f":
            parts.append(f".{rest}")
        elif kind == "v":
            parts.append(f"[={rest}]")
        else:
            keys = json.loads(rest)
            parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]")
    return "".join(parts)
