"""What a write does to an object: the registry strategies of kube-apiserver, as pure functions.

Each function takes the current state (the stored object, if any), the request's object and
`now`, and returns the object to store or raises ApiError. No I/O and no clock reads: the
handlers own the store and the time.
"""

from __future__ import annotations

import copy
import datetime as _dt
import uuid
from dataclasses import dataclass
from typing import Any

from localcluster import kinds
from localcluster.clock import rfc3339
from localcluster.errors import STALE, FieldError, bad_request, conflict, invalid
from localcluster.names import generate_name, validate_annotations, validate_labels
from localcluster.resources import ResourceType

# Resources whose strategy keeps metadata.generation (others leave it unset, as a real server).
_NO_GENERATION = {("", p) for p in ("configmaps", "secrets", "events", "endpoints", "serviceaccounts",
                                     "namespaces", "pods", "nodes", "services", "persistentvolumeclaims",
                                     "limitranges", "resourcequotas")} | {
    ("coordination.k8s.io", "leases"), ("events.k8s.io", "events")}

SYSTEM_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


_OMIT_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences", "managedFields", "generateName")


def drop_empty_metadata(meta: dict[str, Any]) -> None:
    """Go's `omitempty`: empty lists and maps in ObjectMeta are not stored."""
    for key in _OMIT_EMPTY:
        if key in meta and not meta[key]:
            del meta[key]


def tracks_generation(rt: ResourceType) -> bool:
    return rt.group_resource not in _NO_GENERATION


def check_type(rt: ResourceType, obj: Any) -> dict[str, Any]:
    """The body must be an object of this resource's kind; missing apiVersion/kind are filled in."""
    if not isinstance(obj, dict):
        raise bad_request(f"the object provided is unrecognized (must be of type {rt.kind}): "
                          f"couldn't get version/kind; json parse error: expected an object")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if kind is not None and kind != rt.kind:
        raise bad_request(f"the object provided is unrecognized (must be of type {rt.kind}): "
                          f"kind \"{kind}\" does not match the expected kind \"{rt.kind}\"")
    if api_version is not None and api_version != rt.api_version:
        raise bad_request(f"the API version in the data ({api_version}) does not match the expected "
                          f"API version ({rt.api_version})")
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata: expected an object")
    # Field order as a Go server writes it; explicit nulls are zero values, i.e. absent.
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata") and v is not None}
    return {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": meta, **rest}


def place_in_namespace(rt: ResourceType, obj: dict[str, Any], namespace: str | None) -> None:
    meta = obj["metadata"]
    if not rt.namespaced:
        meta.pop("namespace", None)
        return
    body_ns = meta.get("namespace")
    if body_ns and namespace and body_ns != namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
    meta["namespace"] = namespace or body_ns or ""


def validate_metadata(rt: ResourceType, obj: dict[str, Any], creating: bool) -> list[FieldError]:
    meta = obj["metadata"]
    errors: list[FieldError] = []
    name = meta.get("name")
    if not name:
        if not (creating and meta.get("generateName")):  # the server names it from generateName
            detail = "name or generateName is required" if creating else ""
            errors.append(FieldError("Required", "metadata.name", detail))
    elif not isinstance(name, str):
        errors.append(FieldError("Invalid", "metadata.name", "must be a string", name))
    else:
        for msg in kinds.name_errors(rt, name):
            errors.append(FieldError("Invalid", "metadata.name", msg, name))
    if rt.namespaced and not meta.get("namespace"):
        errors.append(FieldError("Required", "metadata.namespace", ""))
    errors += validate_labels(meta.get("labels"), "metadata.labels")
    errors += validate_annotations(meta.get("annotations"), "metadata.annotations")
    finalizers = meta.get("finalizers")
    if finalizers is not None and not (isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers)):
        errors.append(FieldError("Invalid", "metadata.finalizers", "must be a list of strings", finalizers))
    refs = meta.get("ownerReferences")
    if refs is not None:
        errors += _owner_reference_errors(refs)
    return errors


def _owner_reference_errors(refs: Any) -> list[FieldError]:
    if not isinstance(refs, list):
        return [FieldError("Invalid", "metadata.ownerReferences", "must be a list", refs)]
    errors, controllers = [], 0
    for i, ref in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, dict):
            errors.append(FieldError("Invalid", path, "must be an object", ref))
            continue
        for field_name in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field_name):
                errors.append(FieldError("Invalid", f"{path}.{field_name}", f"{field_name} must not be empty", ""))
        if ref.get("controller"):
            controllers += 1
    if controllers > 1:
        errors.append(FieldError("Invalid", "metadata.ownerReferences", "Only one reference can have Controller set to true", refs))
    return errors


def prepare_create(rt: ResourceType, obj: dict[str, Any], now: _dt.datetime) -> dict[str, Any]:
    """Defaults, validation and the system fields a stored object gets on create."""
    meta = obj["metadata"]
    if meta.get("resourceVersion"):
        raise bad_request("resourceVersion should not be set on objects to be created")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generate_name(str(meta["generateName"]))
    for key in SYSTEM_METADATA:
        meta.pop(key, None)
    meta.pop("selfLink", None)
    if not meta.get("managedFields"):
        meta.pop("managedFields", None)
    drop_empty_metadata(meta)
    kinds.prepare_for_create(rt, obj)
    errors = validate_metadata(rt, obj, creating=True) + kinds.validate(rt, obj, None)
    if errors:
        raise invalid(rt.group, rt.kind, str(meta.get("name") or meta.get("generateName") or ""), errors)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = rfc3339(now)
    if tracks_generation(rt):
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    kinds.after_create_fields(rt, obj)
    return obj


def name_from_url(obj: dict[str, Any], name: str) -> None:
    """A write to `.../NAME` names the object NAME; a body that names another is a 400."""
    meta = obj["metadata"]
    if meta.get("name") and meta["name"] != name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    meta["name"] = name


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def check_resource_version(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    wanted = new["metadata"].get("resourceVersion")
    name = old["metadata"]["name"]
    if not wanted:
        if not rt.builtin:
            raise invalid(rt.group, rt.kind, name, [FieldError(
                "Invalid", "metadata.resourceVersion", "must be specified for an update", 0)])
        return
    if wanted != old["metadata"]["resourceVersion"]:
        raise conflict(rt.group, rt.plural, name, STALE)


def prepare_update(rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    """The object a PUT (or a PATCH, after applying the patch) stores; raises on any violation."""
    old_meta, meta = old["metadata"], new["metadata"]
    name = old_meta["name"]
    name_from_url(new, name)
    if rt.namespaced:
        if meta.get("namespace") and meta["namespace"] != old_meta.get("namespace"):
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = old_meta["namespace"]
    if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
        raise conflict(rt.group, rt.plural, name,
                       f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {old_meta.get('uid')}")
    check_resource_version(rt, old, new)
    if subresource == "status":
        result = copy.deepcopy(old)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        errors = kinds.validate_status(rt, result, old)
        if errors:
            raise invalid(rt.group, rt.kind, name, errors)
        return result
    for key in SYSTEM_METADATA:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if rt.has_status:
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    if old_meta.get("deletionTimestamp"):
        added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
        if added:
            raise invalid(rt.group, rt.kind, name, [FieldError(
                "Forbidden", "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted, found new finalizers "
                + "[]string{" + ", ".join(f'"{f}"' for f in added) + "}")])
    drop_empty_metadata(meta)
    kinds.prepare_for_update(rt, new, old)
    errors = validate_metadata(rt, new, creating=False) + kinds.validate(rt, new, old)
    if errors:
        raise invalid(rt.group, rt.kind, name, errors)
    if tracks_generation(rt):
        generation = old_meta.get("generation", 1)
        meta["generation"] = generation + 1 if _spec_part(new) != _spec_part(old) else generation
    return new


def finished_deleting(obj: dict[str, Any]) -> bool:
    """An update left an object being deleted with no finalizers: it goes away now, unless it is
    a pod still in its grace period (apiserver's ShouldDeleteDuringUpdate: only a stored
    deletionGracePeriodSeconds of 0 or none). Such a pod stays Terminating until its kubelet,
    once the containers stopped, deletes it with grace 0; on a node that stopped answering, until
    someone force-deletes it."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") \
        and not meta.get("deletionGracePeriodSeconds")


ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"

# Legacy defaults when DELETE names no propagationPolicy (registry DefaultGarbageCollectionPolicy).
_ORPHAN_BY_DEFAULT = {("batch", "jobs"), ("batch", "cronjobs")}


@dataclass(frozen=True)
class DeletePlan:
    """Either remove the object now, or store it marked (deletionTimestamp, GC finalizers)."""

    remove: bool
    obj: dict[str, Any]


def plan_delete(rt: ResourceType, current: dict[str, Any], options: dict[str, Any], now: _dt.datetime) -> DeletePlan:
    meta = current["metadata"]
    name = meta["name"]
    pre = options.get("preconditions") or {}
    if not isinstance(pre, dict):
        raise bad_request("json: cannot unmarshal into Go struct field DeleteOptions.preconditions of type v1.Preconditions")
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise conflict(rt.group, rt.plural, name,
                       f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
        raise conflict(rt.group, rt.plural, name,
                       f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                       f"ResourceVersion in object meta: {meta.get('resourceVersion')}")
    policy = options.get("propagationPolicy")
    orphan_flag = options.get("orphanDependents")
    if policy is not None and orphan_flag is not None:
        raise invalid("meta.k8s.io", "DeleteOptions", "", [FieldError(
            "Invalid", "propagationPolicy", "orphanDependents and deletionPropagation cannot be both set", policy)])
    if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
        raise invalid("meta.k8s.io", "DeleteOptions", "", [FieldError(
            "NotSupported", "propagationPolicy", value=policy, supported=("Foreground", "Background", "Orphan"))])
    if policy is None:
        if orphan_flag is True or (orphan_flag is None and rt.group_resource in _ORPHAN_BY_DEFAULT):
            policy = "Orphan"
        else:
            policy = "Background"
    obj = copy.deepcopy(current)
    finalizers = list(meta.get("finalizers") or [])
    if policy == "Orphan":
        finalizers = [f for f in finalizers if f != FOREGROUND] + ([] if ORPHAN in finalizers else [ORPHAN])
    elif policy == "Foreground":
        finalizers = [f for f in finalizers if f != ORPHAN] + ([] if FOREGROUND in finalizers else [FOREGROUND])
    is_namespace = rt.group_resource == ("", "namespaces")
    if is_namespace:
        obj.setdefault("status", {})["phase"] = "Terminating"
    grace = pod_grace_period(rt, current, options)
    if not finalizers and not grace and not (is_namespace and (obj.get("spec") or {}).get("finalizers")):
        return DeletePlan(True, current)
    if meta.get("deletionTimestamp") and finalizers == (meta.get("finalizers") or []) \
            and grace >= int(meta.get("deletionGracePeriodSeconds") or 0):
        return DeletePlan(False, current)
    return DeletePlan(False, _mark_deleting(rt, obj, finalizers, now, grace))


def pod_grace_period(rt: ResourceType, pod: dict[str, Any], options: dict[str, Any]) -> int:
    """Seconds a deleted pod gets to stop (registry/core/pod CheckGracefulDelete): none when it was
    never bound or already finished, else DeleteOptions.gracePeriodSeconds or the pod's
    terminationGracePeriodSeconds (30). The kubelet stops it and the pod goes."""
    if rt.group_resource != ("", "pods"):
        return 0
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    asked = options.get("gracePeriodSeconds")
    grace = spec.get("terminationGracePeriodSeconds", 30) if asked is None else asked
    try:
        return max(int(grace), 0)
    except (TypeError, ValueError):
        return 0


def _mark_deleting(rt: ResourceType, obj: dict[str, Any], finalizers: list[str], now: _dt.datetime,
                   grace: int = 0) -> dict[str, Any]:
    meta = obj["metadata"]
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    if not meta.get("deletionTimestamp") or grace < int(meta.get("deletionGracePeriodSeconds") or 0):
        first = not meta.get("deletionTimestamp")
        meta["deletionTimestamp"] = rfc3339(now + _dt.timedelta(seconds=grace))
        meta["deletionGracePeriodSeconds"] = grace
        if first and tracks_generation(rt):
            meta["generation"] = meta.get("generation", 1) + 1
    return obj
