"""AppWrapper `workload.codeflare.dev/v1beta2`: a typed view parsed once from the wire dict.

Parsing checks structure only (shapes and types, first error wins, with the field path);
the semantic checks upstream's webhook makes (nesting, namespaces, podSet counts, inference
agreement) are gateway rules in `webhook/rules/appwrapper_rules.py`, which aggregate errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.objects import api_version_kind
from batchgate.api.paths import Location
from batchgate.api.kueue_fields import string_map
from batchgate.api.values import parse_str
from batchgate.frozen import frozen
from batchgate.kinds import APPWRAPPER, PodSet
from batchgate.kinds.wrapped import declared_or_inferred, infer_pod_sets

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class DeclaredPodSet:
    """A podSet as the user wrote it; `replicas` None means 1."""

    path: str
    replicas: int | None = None
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    @property
    def count(self) -> int:
        return 1 if self.replicas is None else self.replicas


@frozen
class Component:
    index: int
    template: Mapping[str, Any]
    declared_pod_sets: tuple[DeclaredPodSet, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    @property
    def api_version(self) -> str:
        return api_version_kind(self.template)[0]

    @property
    def kind(self) -> str:
        return api_version_kind(self.template)[1]

    @property
    def location(self) -> Location:
        return ("spec", "components", self.index)

    @property
    def where(self) -> str:
        return f"spec.components[{self.index}]"


@frozen
class AppWrapper:
    name: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    components: tuple[Component, ...]
    suspend: bool = False
    managed_by: str | None = None


def parse_appwrapper(obj: Any) -> AppWrapper:
    """Parse an AppWrapper wire dict; raise FieldError with the path of the first problem."""
    if not isinstance(obj, dict):
        raise FieldError("", f"an AppWrapper must be a mapping, got {type_name(obj)}")
    if not APPWRAPPER.is_kind_of(obj):
        raise FieldError("apiVersion", f"expected {APPWRAPPER.api_version} AppWrapper")
    meta = _mapping(obj.get("metadata"), "metadata")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise FieldError("spec", f"must be a mapping, got {type_name(spec)}")
    raw_components = spec.get("components")
    if not isinstance(raw_components, list):
        raise FieldError("spec.components", f"is required and must be a list, got {type_name(raw_components)}")
    suspend = spec.get("suspend", False)
    if suspend is not None and not isinstance(suspend, bool):
        raise FieldError("spec.suspend", f"must be true or false, got {type_name(suspend)}")
    managed_by = spec.get("managedBy")
    if managed_by is not None and not isinstance(managed_by, str):
        raise FieldError("spec.managedBy", f"must be a string, got {type_name(managed_by)}")
    return AppWrapper(
        name=parse_str(meta.get("name") or meta.get("generateName") or "", "metadata.name"),
        namespace=parse_str(meta.get("namespace") or "", "metadata.namespace"),
        labels=string_map(meta.get("labels"), "metadata.labels"),
        annotations=string_map(meta.get("annotations"), "metadata.annotations"),
        components=tuple(_component(c, i) for i, c in enumerate(raw_components)),
        suspend=bool(suspend),
        managed_by=managed_by,
    )


def _component(value: Any, index: int) -> Component:
    where = f"spec.components[{index}]"
    if not isinstance(value, dict):
        raise FieldError(where, f"must be a mapping, got {type_name(value)}")
    template = value.get("template")
    if not isinstance(template, dict):
        raise FieldError(
            child(where, "template"),
            f"failed to decode as an object (apiVersion, kind, metadata, spec), got {type_name(template)}",
        )
    raw_pod_sets = value.get("podSets") or []
    if not isinstance(raw_pod_sets, list):
        raise FieldError(child(where, "podSets"), f"must be a list, got {type_name(raw_pod_sets)}")
    return Component(
        index=index,
        template=template,
        declared_pod_sets=tuple(
            _declared(p, child(child(where, "podSets"), i)) for i, p in enumerate(raw_pod_sets)
        ),
        annotations=string_map(value.get("annotations"), child(where, "annotations")),
    )


def _declared(value: Any, where: str) -> DeclaredPodSet:
    if not isinstance(value, dict):
        raise FieldError(where, f"must be a mapping, got {type_name(value)}")
    path = value.get("path", "")
    if not isinstance(path, str):
        raise FieldError(child(where, "path"), f"must be a string, got {type_name(path)}")
    replicas = value.get("replicas")
    if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0):
        raise FieldError(child(where, "replicas"), "must be a non-negative integer")
    return DeclaredPodSet(path, replicas, string_map(value.get("annotations"), child(where, "annotations")))


def inferred_pod_sets(component: Component) -> tuple[PodSet, ...] | None:
    """Upstream inference for the component's kind; None when the kind is not inferable."""
    return infer_pod_sets(component.template, child(component.where, "template"))


def effective_pod_sets(component: Component) -> tuple[PodSet, ...]:
    """Declared podSets when given (paths parsed), else inferred ones, else none."""
    raw = {
        "template": component.template,
        "podSets": [{"path": p.path, "replicas": p.replicas} for p in component.declared_pod_sets],
    }
    return declared_or_inferred(raw, component.where)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a mapping, got {type_name(value)}")
    return value
