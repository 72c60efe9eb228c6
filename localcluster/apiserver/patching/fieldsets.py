"""Field sets as managedFields hold them (fieldsV1): paths of `f:<field>`, `k:{<list-map keys>}`
and `v:<set value>` tokens, plus how each list of a built-in type is keyed for server-side apply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from localcluster.apiserver.patching.patch_meta import field_meta, is_builtin, root_type

Path = tuple[str, ...]
MISSING = object()

# list-map keys where server-side apply keys a list by more than the strategic-merge key.
SSA_KEYS = {
    ("Container", "ports"): ("containerPort", "protocol"),
    ("ServiceSpec", "ports"): ("port", "protocol"),
    ("PodSpec", "topologySpreadConstraints"): ("topologyKey", "whenUnsatisfiable"),
}
# Lists that strategic merge merges but server-side apply treats whole (`+listType=atomic`).
SSA_ATOMIC = {("JobStatus", "conditions")}
KEY_DEFAULTS = {"protocol": "TCP"}
# Fields of built-in kinds that hold Go maps or pointers, so they are members of a set in their own
# right when they appear; other nested objects of built-ins are plain structs.
MAP_FIELDS = {"labels", "annotations", "data", "binaryData", "stringData", "nodeSelector", "matchLabels",
              "selector", "limits", "requests", "hard", "rollingUpdate", "resources"}
class ApplyError(ValueError):
    """An applied configuration that cannot be turned into a field set (e.g. a list item without its key)."""


# Where a value sits in its type: a built-in type's name (patch_meta), a CRD's openAPIV3Schema
# node, or None when nothing is known (maps merge, lists are atomic).
Node = Union[str, dict[str, Any], None]


@dataclass(frozen=True)
class ListKind:
    kind: str  # "map" | "set" | "atomic"
    keys: tuple[str, ...] = ()
    element: Node = None


def root_node(kind_key: str, schema: dict[str, Any] | None = None) -> Node:
    """Built-ins by their type tables; custom resources by their schema, metadata always typed."""
    if is_builtin(kind_key) or not isinstance(schema, dict):
        return root_type(kind_key)
    return {**schema, "properties": {**(schema.get("properties") or {}), "metadata": "ObjectMeta"}}


def child_node(node: Node, field: str) -> Node:
    if isinstance(node, dict):
        properties = node.get("properties") or {}
        if field in properties:
            return properties[field]
        extra = node.get("additionalProperties")
        return extra if isinstance(extra, dict) else None
    return field_meta(node, field).type


def list_kind(node: Node, field: str) -> ListKind:
    """How server-side apply keys a list: `+listType` of built-ins, `x-kubernetes-list-type` of CRDs."""
    if isinstance(node, dict):
        child = child_node(node, field)
        list_type = child.get("x-kubernetes-list-type") if isinstance(child, dict) else None
        if list_type == "map" and isinstance(child, dict):
            keys = tuple(k for k in child.get("x-kubernetes-list-map-keys") or () if isinstance(k, str))
            return ListKind("map", keys, child.get("items")) if keys else ListKind("atomic")
        return ListKind("set") if list_type == "set" else ListKind("atomic")
    meta = field_meta(node, field)
    if not meta.merge or (node, field) in SSA_ATOMIC:
        return ListKind("atomic")
    if meta.key is None:
        return ListKind("set")
    return ListKind("map", SSA_KEYS.get((node or "", field), (meta.key,)), meta.type)


def item_key(item: Any, keys: tuple[str, ...], path: Path, index: int) -> dict[str, Any]:
    """The key fields of a list-map item (protocol defaulting to TCP); `path[index]` names it in errors."""
    if not isinstance(item, dict):
        raise ApplyError(f"{_show(path)}[{index}]: expected an object in an associative list keyed by "
                         f"{', '.join(keys)}")
    found = {}
    for key in keys:
        if key in item:
            found[key] = item[key]
        elif key in KEY_DEFAULTS:
            found[key] = KEY_DEFAULTS[key]
        else:
            raise ApplyError(f'{_show(path)}[{index}]: associative list with keys has an element that omits key '
                             f'field "{key}" (and doesn\'t have default value)')
    return found


def key_token(key: dict[str, Any]) -> str:
    return "k:" + json.dumps(key, separators=(",", ":"), sort_keys=True)


def value_token(value: Any) -> str:
    return "v:" + json.dumps(value, separators=(",", ":"))


OBJECT = object()  # the value recorded for an owned object: objects compare by their fields
TOP_IGNORED = {"apiVersion", "kind"}
METADATA_IGNORED = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}


def field_values(obj: dict[str, Any], kind_key: str, maps_are_members: bool,
                 schema: dict[str, Any] | None = None) -> dict[Path, Any]:
    """Every owned path of `obj` (leaves, list items and, for updates, map-like objects themselves)
    with its value (OBJECT for objects), so two versions of an object compare in one walk each."""
    out: dict[Path, Any] = {}
    _walk_map(obj, root_node(kind_key, schema), (), out, maps_are_members, not is_builtin(kind_key))
    return out


def _walk_map(obj: dict[str, Any], node: Node, path: Path, out: dict[Path, Any], members: bool,
              custom: bool) -> None:
    for name, value in obj.items():
        if (not path and name in TOP_IGNORED) or (path == ("f:metadata",) and name in METADATA_IGNORED):
            continue
        child = path + (f"f:{name}",)
        if isinstance(value, dict) and value:
            if members and (custom or name in MAP_FIELDS) and child != ("f:metadata",):
                out[child] = OBJECT
            _walk_map(value, child_node(node, name), child, out, members, custom)
        elif isinstance(value, list) and value:
            kind = list_kind(node, name)
            if kind.kind == "atomic":
                out[child] = value
                continue
            for index, item in enumerate(value):
                if kind.kind == "set":
                    token = value_token(item)
                else:
                    token = key_token(item_key(item, kind.keys, child, index))
                if child + (token,) in out:
                    raise ApplyError(f"{_show(child)}: duplicate entries for key {token[2:]}")
                if kind.kind == "map":
                    out[child + (token,)] = OBJECT
                    _walk_map(item, kind.element, child + (token,), out, members, custom)
                else:
                    out[child + (token,)] = item
        else:
            out[child] = value


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
