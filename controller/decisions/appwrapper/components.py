"""The objects an AppWrapper's components become, exactly as upstream creates them
(docs/appwrapper.md, "What components become").

`component_status` fixes each component's podSets once (declared, else inferred) so later spec
edits cannot change what the controller counts. `build_component` returns the object to create:
namespace defaulted, the AppWrapper label on it and on every podSet's pod template, the
AppWrapper as controlling owner, the podSetInfos Kueue-style admission wrote merged into each
pod template, and the Autopilot anti-affinity for pods that use the GPU resource. The scheduler
name is not set here: the gateway sets it when the AppWrapper is admitted.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.api.appwrapper import DeclaredPodSet, effective_pod_sets, inferred_pod_sets, parse_appwrapper
from batchgate.api.appwrapper_status import AppWrapperState, ComponentStatus
from batchgate.api.errors import FieldError, type_name
from batchgate.api.objects import metadata
from batchgate.api.paths import parse_podset_path, resolve
from batchgate.api.kueue_fields import string_map
from batchgate.policy import NodeHealth
from controller.decisions.appwrapper.pods import uses_resource

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class ComponentError(Exception):
    """A component that cannot be created; str() is the message users see.

    `fatal` says retrying cannot help (the AppWrapper goes straight to Failed).
    """

    def __init__(self, message: str, *, fatal: bool) -> None:
        super().__init__(message)
        self.fatal = fatal


def component_status(aw: Mapping[str, Any]) -> tuple[ComponentStatus, ...]:
    """The initial `status.componentStatus` of the AppWrapper wire object: name, kind, apiVersion
    and the definitive podSets (declared, else inferred)."""
    try:
        parsed = parse_appwrapper(aw)
        out = []
        for component in parsed.components:
            pod_sets: tuple[DeclaredPodSet, ...]
            if component.declared_pod_sets:
                effective_pod_sets(component)  # the paths must parse
                pod_sets = component.declared_pod_sets
            else:
                pod_sets = tuple(DeclaredPodSet(p.path, p.replicas) for p in inferred_pod_sets(component) or ())
            meta = component.template.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            out.append(ComponentStatus(name if isinstance(name, str) else "", component.kind,
                                       component.api_version, pod_sets))
        return tuple(out)
    except FieldError as exc:
        raise ComponentError(str(exc), fatal=True) from None


def build_component(aw: AppWrapperState, index: int, health: NodeHealth) -> dict[str, Any]:
    """The object to create for component `index`; the AppWrapper is never changed."""
    aw_spec = aw.wire.get("spec")
    aw_name, aw_namespace, aw_uid = aw.name, aw.namespace, aw.uid
    components = aw_spec.get("components") if isinstance(aw_spec, dict) else None
    if not isinstance(components, list) or not 0 <= index < len(components):
        raise ComponentError(f"spec.components[{index}]: no such component", fatal=True)
    if not (aw_name and aw_namespace and aw_uid):
        raise ComponentError("the AppWrapper has no name, namespace or uid to own its components", fatal=True)
    component = components[index]
    where = f"spec.components[{index}]"
    template = component.get("template") if isinstance(component, dict) else None
    if not isinstance(template, dict) or not template.get("apiVersion") or not template.get("kind"):
        raise ComponentError(f"{where}.template: failed to decode as an object with apiVersion and kind", fatal=True)
    obj = copy.deepcopy(template)
    obj_meta = _mapping_at(obj, "metadata", f"{where}.template.metadata")
    namespace = obj_meta.get("namespace")
    if namespace and namespace != aw_namespace:
        raise ComponentError(
            f"{where}: namespace {namespace!r} differs from the AppWrapper's namespace {aw_namespace!r}", fatal=True
        )
    obj_meta["namespace"] = aw_namespace
    labels = _mapping_at(obj_meta, "labels", f"{where}.template.metadata.labels")
    labels.setdefault(keys.APPWRAPPER_LABEL, aw_name)
    obj_meta["ownerReferences"] = _owned_by(obj_meta.get("ownerReferences"), aw_name, aw_uid, where)
    who = _describe(obj, index)
    infos = component.get("podSetInfos") or []
    if not isinstance(infos, list):
        raise ComponentError(f"{where}.podSetInfos: must be a list, got {type_name(infos)}", fatal=True)
    for i, pod_set in enumerate(_pod_sets(aw, index)):
        if infos and i >= len(infos):
            raise ComponentError(f"missing podSetInfo {i} for component {index}", fatal=True)
        info = infos[i] if i < len(infos) else {}
        if not isinstance(info, dict):
            raise ComponentError(f"{where}.podSetInfos[{i}]: must be a mapping, got {type_name(info)}", fatal=True)
        pod_template = _pod_template(obj, pod_set, f"{where}.podSets[{i}].path")
        _inject(pod_template, info, aw_name, who, f"{where}.podSetInfos[{i}]")
        if uses_resource(pod_template["spec"], keys.GPU_RESOURCE):
            _avoid_nodes(pod_template["spec"], health, who)
    return obj


def _pod_sets(aw: AppWrapperState, index: int) -> list[str]:
    """Paths of the component's podSets: the ones recorded in status, else computed now."""
    if index < len(aw.components):
        return [p.path for p in aw.components[index].pod_sets]
    return [p.path for p in component_status(aw.wire)[index].pod_sets]


def _pod_template(obj: dict[str, Any], path: Any, where: str) -> dict[str, Any]:
    try:
        steps = parse_podset_path(path, where)
        found = resolve(obj, steps[1:], where, path)
    except FieldError as exc:
        raise ComponentError(str(exc), fatal=True) from None
    if not isinstance(found.get("spec"), dict):
        raise ComponentError(f"{where}: no pod spec at {path}.spec", fatal=True)
    if not isinstance(found.get("metadata"), dict):
        found["metadata"] = {}
    return found


def _inject(template: dict[str, Any], info: Mapping[str, Any], aw_name: str, who: str, where: str) -> None:
    """Merge one podSetInfo into a pod template; a value differing from the template's is fatal."""
    meta, spec = template["metadata"], template["spec"]
    annotations = _string_map(info.get("annotations"), f"{where}.annotations")
    if annotations:
        meta["annotations"] = _merge(meta.get("annotations"), annotations, "annotation", who)
    injected_labels = {keys.APPWRAPPER_LABEL: aw_name, **_string_map(info.get("labels"), f"{where}.labels")}
    meta["labels"] = _merge(meta.get("labels"), injected_labels, "label", who)
    selector = _string_map(info.get("nodeSelector"), f"{where}.nodeSelector")
    if selector:
        spec["nodeSelector"] = _merge(spec.get("nodeSelector"), selector, "nodeSelector", who)
    tolerations = _list_at(info, "tolerations", where)
    if tolerations:
        spec["tolerations"] = _list_at(spec, "tolerations", who) + copy.deepcopy(tolerations)
    gates = _list_at(info, "schedulingGates", where)
    if gates:
        existing = _list_at(spec, "schedulingGates", who)
        names = {g.get("name") for g in existing if isinstance(g, dict) and isinstance(g.get("name"), str)}
        for j, gate in enumerate(gates):
            name = gate.get("name") if isinstance(gate, dict) else None
            if not isinstance(name, str) or not name:
                raise ComponentError(f"{where}.schedulingGates[{j}]: must be a mapping with a name", fatal=True)
            if name not in names:
                existing.append({"name": name})
                names.add(name)
        spec["schedulingGates"] = existing


def _merge(existing: Any, added: Mapping[str, str], what: str, who: str) -> dict[str, str]:
    current = dict(existing) if isinstance(existing, dict) else {}
    for key, value in added.items():
        if key in current and current[key] != value:
            raise ComponentError(
                f"{who}: {what} {key!r} is {current[key]!r} in the pod template but admission sets {value!r}",
                fatal=True,
            )
        current.setdefault(key, value)
    return current


def _avoid_nodes(spec: dict[str, Any], health: NodeHealth, who: str) -> None:
    """Upstream's Autopilot anti-affinities for a GPU pod: a required NotIn of each label's NoSchedule
    and NoExecute values in every node selector term (one made if none), and one preferred term,
    of the policy's weight, with a NotIn of the PreferNoSchedule values."""
    required_values, preferred_values = health.unschedulable, health.prefer_not
    if not required_values and not preferred_values:
        return
    try:
        affinity = _mapping_at(spec, "affinity", "affinity")
        node_affinity = _mapping_at(affinity, "nodeAffinity", "affinity.nodeAffinity")
        if required_values:
            required = _mapping_at(node_affinity, _REQUIRED, f"affinity.nodeAffinity.{_REQUIRED}")
            terms = _list_at(required, "nodeSelectorTerms", f"affinity.nodeAffinity.{_REQUIRED}") or [{}]
            for i, term in enumerate(terms):
                if not isinstance(term, dict):
                    raise ComponentError(f"nodeSelectorTerms[{i}] must be a mapping, got {type_name(term)}", fatal=True)
                term["matchExpressions"] = _list_at(term, "matchExpressions", f"nodeSelectorTerms[{i}]") + _not_in(
                    required_values)
            required["nodeSelectorTerms"] = terms
        if preferred_values:
            preferred = _list_at(node_affinity, _PREFERRED, "affinity.nodeAffinity")
            preferred.append({"weight": health.prefer_no_schedule_weight,
                              "preference": {"matchExpressions": _not_in(preferred_values)}})
            node_affinity[_PREFERRED] = preferred
    except ComponentError as exc:
        raise ComponentError(f"{who}: {exc}", fatal=True) from None


def _not_in(values: Mapping[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    return [{"key": key, "operator": "NotIn", "values": list(found)} for key, found in values.items()]


def _owned_by(existing: Any, name: str, uid: str, where: str) -> list[dict[str, Any]]:
    refs = [r for r in existing if isinstance(r, dict)] if isinstance(existing, list) else []
    for ref in refs:
        if ref.get("controller") and ref.get("uid") != uid:
            raise ComponentError(
                f"{where}: the template already names a controller ({ref.get('kind')} {ref.get('name')})", fatal=True
            )
    owner = {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": name, "uid": uid,
             "controller": True, "blockOwnerDeletion": True}
    return [r for r in refs if r.get("uid") != uid] + [owner]


def _describe(obj: Mapping[str, Any], index: int) -> str:
    meta = metadata(obj)
    name = meta.get("name") or meta.get("generateName") or "(unnamed)"
    return f"component {index} ({obj.get('kind')} {name})"


def _mapping_at(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    if not isinstance(value, dict):
        raise ComponentError(f"{where}: must be a mapping, got {type_name(value)}", fatal=True)
    return value


def _list_at(parent: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ComponentError(f"{where}: {key} must be a list, got {type_name(value)}", fatal=True)
    return list(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    try:
        return string_map(value, where)
    except FieldError as exc:
        raise ComponentError(str(exc), fatal=True) from None
