"""A container's environment and command line, resolved as the kubelet does before it starts one.

Order (kubelet `makeEnvironmentVariables`): `envFrom` sources first (ConfigMap/Secret, with
`prefix`; keys that are not valid variable names are skipped and reported), then `env` in
order, a plain `value` expanded with `$(VAR)` against what is defined so far plus the service
variables, then the service variables (`KUBERNETES_SERVICE_HOST`...) that nothing overrode.
`command` and `args` are expanded against the final environment. A missing ConfigMap, Secret or
key that is not `optional` is the kubelet's `CreateContainerConfigError`, with its message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from localcluster.sim.units import UnitError, parse_quantity

Obj = Mapping[str, Any]
# (kind "ConfigMap"|"Secret", namespace, name) -> its data (Secret data decoded, ConfigMap
# data and binaryData), or None when the object does not exist.
Lookup = Callable[[str, str, str], "Mapping[str, bytes] | None"]

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_INDEXED_FIELD = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ContainerConfigError(ValueError):
    """What the kubelet reports as CreateContainerConfigError: the message users see."""


@dataclass(frozen=True)
class PodFacts:
    """What the kubelet knows about a pod beyond its spec: its addresses and the node's capacity."""

    pod_ip: str
    host_ip: str
    node_allocatable: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ResolvedContainer:
    env: tuple[tuple[str, str], ...]
    argv: tuple[str, ...]  # command + args after expansion ("" entries kept, as the runtime would)
    skipped_keys: tuple[str, ...] = ()  # envFrom keys that are not valid names (an event says so)

    def env_map(self) -> dict[str, str]:
        return dict(self.env)


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """`$(VAR)` expansion as the kubelet's: `$$` is a literal `$`, an unknown or unterminated
    reference stays as written, a `$` before any other character is kept."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2:close]
                value = lookup(name)
                out.append(f"$({name})" if value is None else value)
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def format_map(values: Mapping[str, str]) -> str:
    """All labels or annotations as the downward API writes them: sorted `key="value"` lines."""
    return "\n".join(f"{k}={_go_quote(values[k])}" for k in sorted(values))


def _go_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def field_value(pod: Obj, path: str, facts: PodFacts) -> str:
    """A `fieldRef.fieldPath` of the pod, as env or a downward API file sees it."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": facts.pod_ip,
        "status.podIPs": facts.pod_ip,
        "status.hostIP": facts.host_ip,
        "status.hostIPs": facts.host_ip,
    }
    if path in simple:
        return str(simple[path])
    if path in ("metadata.labels", "metadata.annotations"):
        return format_map(meta.get(path.split(".")[1]) or {})
    indexed = _INDEXED_FIELD.match(path)
    if indexed:
        return str((meta.get(indexed.group(1)) or {}).get(indexed.group(2), ""))
    raise ContainerConfigError(f'unsupported fieldPath: "{path}"')


def resource_value(container: Obj, ref: Obj, facts: PodFacts) -> str:
    """A `resourceFieldRef`: the container's limit or request in units of `divisor`, rounded up;
    an unset limit is the node's allocatable, as the kubelet defaults it."""
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not name:
        raise ContainerConfigError(f"unsupported container resource: {resource}")
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "limits":
        raw = facts.node_allocatable.get(name)
    try:
        value = parse_quantity(raw if raw is not None else "0", resource)
        divisor = parse_quantity(ref.get("divisor") or "1", f"{resource} divisor")
    except UnitError as err:
        raise ContainerConfigError(str(err)) from None
    if divisor <= 0:
        raise ContainerConfigError(f"{resource} divisor must be positive")
    return str(math.ceil(value / divisor))


def _from_source(kind: str, namespace: str, name: str, optional: bool, lookup: Lookup) -> Mapping[str, bytes] | None:
    data = lookup(kind, namespace, name)
    if data is None and not optional:
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    return data


def _key_value(kind: str, ref: Obj, namespace: str, lookup: Lookup) -> str | None:
    name, key, optional = str(ref.get("name", "")), str(ref.get("key", "")), bool(ref.get("optional"))
    data = _from_source(kind, namespace, name, optional, lookup)
    if data is None:
        return None
    if key not in data:
        if optional:
            return None
        raise ContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return _text(data[key])


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def resolve(pod: Obj, container: Obj, facts: PodFacts, service_env: Sequence[tuple[str, str]],
            lookup: Lookup, base_env: Sequence[tuple[str, str]] = ()) -> ResolvedContainer:
    """The environment and argv the container's process gets; ContainerConfigError if it cannot start.

    `base_env` is what the image itself sets (PATH, HOSTNAME...): pod variables override it."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    service = dict(service_env)
    defined: dict[str, str] = {}
    skipped: list[str] = []

    def known(name: str) -> str | None:
        return defined.get(name, service.get(name))

    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(key)
            if not isinstance(ref, Mapping):
                continue
            data = _from_source(kind, namespace, str(ref.get("name", "")), bool(ref.get("optional")), lookup)
            for k, v in sorted((data or {}).items()):
                if _ENV_NAME.match(prefix + k):
                    defined[prefix + k] = _text(v)
                else:
                    skipped.append(prefix + k)
    for var in container.get("env") or []:
        name = str(var.get("name", ""))
        source = var.get("valueFrom")
        if var.get("value") or not isinstance(source, Mapping):
            defined[name] = expand(str(var.get("value") or ""), known)
            continue
        value: str | None
        if "fieldRef" in source:
            value = field_value(pod, str((source["fieldRef"] or {}).get("fieldPath", "")), facts)
        elif "resourceFieldRef" in source:
            value = resource_value(container, source["resourceFieldRef"] or {}, facts)
        elif "configMapKeyRef" in source:
            value = _key_value("ConfigMap", source["configMapKeyRef"] or {}, namespace, lookup)
        elif "secretKeyRef" in source:
            value = _key_value("Secret", source["secretKeyRef"] or {}, namespace, lookup)
        else:
            value = ""
        if value is not None:
            defined[name] = value
    merged = dict(base_env)
    merged.update({k: v for k, v in service.items() if k not in defined})
    merged.update(defined)
    argv = [expand(str(a), merged.get) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    return ResolvedContainer(tuple(merged.items()), tuple(argv), tuple(skipped))


def service_variables(host: str, port: int) -> list[tuple[str, str]]:
    """The `kubernetes` Service's variables every container gets (in-cluster client config)."""
    return [
        ("KUBERNETES_SERVICE_HOST", host),
        ("KUBERNETES_SERVICE_PORT", str(port)),
        ("KUBERNETES_SERVICE_PORT_HTTPS", str(port)),
        ("KUBERNETES_PORT", f"tcp://{host}:{port}"),
        (f"KUBERNETES_PORT_{port}_TCP", f"tcp://{host}:{port}"),
        (f"KUBERNETES_PORT_{port}_TCP_PROTO", "tcp"),
        (f"KUBERNETES_PORT_{port}_TCP_PORT", str(port)),
        (f"KUBERNETES_PORT_{port}_TCP_ADDR", host),
    ]
