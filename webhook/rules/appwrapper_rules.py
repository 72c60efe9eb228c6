"""Upstream AppWrapper validation (its webhook's checks), errors aggregated.

Create invariants, numbered as upstream numbers them:
 1. AppWrappers must not contain other AppWrappers.
 2. Components only create objects in the AppWrapper's own namespace.
 3. Every declared podSet path resolves to a map whose `spec` is a strict PodSpec.
 4. For kinds upstream can infer, declared podSets agree with the inferred ones.
 5. Between 1 and 8 podSets in total.
Plus ours: every component's kind is in `allowedKinds.wrapped`.
Update: components, templates, podSets and managedBy are immutable (identity: validation.py).
"""

from __future__ import annotations

from typing import Any

from batchgate.api.appwrapper import AppWrapper, Component, inferred_pod_sets, parse_appwrapper
from batchgate.api.errors import FieldError, child
from batchgate.api.objects import qualified_kind
from batchgate.api.paths import format_steps, parse_podset_path, resolve
from batchgate.api.pod_spec import check_pod_spec
from batchgate.kinds import APPWRAPPER
from batchgate.policy import Policy
from webhook.rules.ray_rules import ray_shape_errors

MAX_POD_SETS = 8


def validate_create(obj: Any, namespace: str, policy: Policy) -> list[FieldError]:
    try:
        aw = parse_appwrapper(obj)
    except FieldError as exc:
        return [exc]
    errors: list[FieldError] = []
    total = 0
    for component in aw.components:
        count, component_errors = _check_component(component, aw, namespace, policy)
        total += count
        errors.extend(component_errors)
    if not errors and total == 0:  # 5.
        errors.append(FieldError("spec.components", "components contains no podspecs"))
    elif total > MAX_POD_SETS:  # 5.
        errors.append(
            FieldError("spec.components", f"components contains {total} podspecs; at most {MAX_POD_SETS} are allowed")
        )
    return errors


def _check_component(
    component: Component, aw: AppWrapper, namespace: str, policy: Policy
) -> tuple[int, list[FieldError]]:
    """The number of podSets the component contributes, and what is wrong with it."""
    where = component.where
    template_at = child(where, "template")
    errors: list[FieldError] = []
    if not component.kind or not component.api_version:
        return 0, [FieldError(template_at, "must have apiVersion and kind")]
    if APPWRAPPER.is_kind_of(component.template):  # 1.
        return 0, [FieldError(template_at, "Nested AppWrappers are forbidden")]
    meta = component.template.get("metadata")
    other_ns = meta.get("namespace") if isinstance(meta, dict) else None
    if other_ns and other_ns != (aw.namespace or namespace):  # 2.
        errors.append(
            FieldError(f"{template_at}.metadata.namespace", "AppWrappers cannot create objects in other namespaces")
        )
    kind = qualified_kind(component.api_version, component.kind)
    if kind not in policy.allowed_kinds.wrapped:
        errors.append(FieldError(child(template_at, "kind"), f"{kind} is not in allowedKinds.wrapped"))
    errors.extend(ray_shape_errors(kind, component.template, f"{template_at}."))
    declared = component.declared_pod_sets
    seen: set[str] = set()
    for i, pod_set in enumerate(declared):  # 3.
        at = child(child(where, "podSets"), i)
        if pod_set.path in seen:
            errors.append(FieldError(child(at, "path"), f"multiple DeclaredPodSets with path {pod_set.path!r}"))
        seen.add(pod_set.path)
        try:
            steps = parse_podset_path(pod_set.path, child(at, "path"))
            found = resolve(component.template, steps[1:], child(at, "path"), pod_set.path)
            if "spec" not in found:
                raise FieldError(child(at, "path"), f"path {pod_set.path!r} leads to a map without a spec")
            check_pod_spec(found["spec"], format_steps(component.location + steps + ("spec",)))
        except FieldError as exc:
            errors.append(exc)
    try:
        inferred = inferred_pod_sets(component)
    except FieldError as exc:
        return len(declared), errors + [exc]
    if inferred is None:
        return len(declared), errors
    errors.extend(_check_agreement(component, inferred))  # 4.
    if not declared:
        errors.extend(_check_inferred_specs(component, inferred))
    return max(len(declared), len(inferred)), errors


def _check_agreement(component: Component, inferred: tuple[Any, ...]) -> list[FieldError]:
    declared = component.declared_pod_sets
    if not declared:
        return []
    where = child(component.where, "podSets")
    if len(declared) != len(inferred):
        return [FieldError(where, f"DeclaredPodSet count {len(declared)} differs from inferred count {len(inferred)}")]
    by_path = {p.path: (i, p) for i, p in enumerate(declared)}
    errors = []
    for pod_set in inferred:
        if pod_set.path not in by_path:
            errors.append(FieldError(where, f"PodSet with path {pod_set.path!r} is missing"))
            continue
        i, mine = by_path[pod_set.path]
        if mine.count != pod_set.replicas:
            errors.append(
                FieldError(
                    child(child(where, i), "replicas"),
                    f"replica count {mine.count} differs from inferred count {pod_set.replicas}",
                )
            )
    return errors


def _check_inferred_specs(component: Component, inferred: tuple[Any, ...]) -> list[FieldError]:
    """Inferred podSets must point at real pod templates with strict PodSpecs too."""
    errors = []
    template_at = child(component.where, "template")
    for pod_set in inferred:
        at = format_steps(component.location + ("template",) + pod_set.location)
        try:
            found = resolve(component.template, pod_set.location, template_at, pod_set.path)
            if "spec" not in found:
                raise FieldError(at, "pod template has no spec")
            check_pod_spec(found["spec"], f"{at}.spec")
        except FieldError as exc:
            errors.append(exc)
    return errors


def validate_update(old: Any, new: Any) -> list[FieldError]:
    """Only suspend, podSetInfos, annotations, other labels and status may change."""
    try:
        before, after = parse_appwrapper(old), parse_appwrapper(new)
    except FieldError as exc:
        return [exc]
    immutable = "attempt to change immutable field"
    errors = []
    if len(before.components) != len(after.components):
        return [FieldError("spec.components", f"{immutable} (number of components)")]
    for was, now in zip(before.components, after.components):
        if was.template != now.template:
            errors.append(FieldError(child(now.where, "template"), immutable))
        if len(was.declared_pod_sets) != len(now.declared_pod_sets):
            errors.append(FieldError(child(now.where, "podSets"), f"{immutable} (number of podSets)"))
            continue
        for i, (a, b) in enumerate(zip(was.declared_pod_sets, now.declared_pod_sets)):
            at = child(child(now.where, "podSets"), i)
            if a.path != b.path:
                errors.append(FieldError(child(at, "path"), immutable))
            if a.replicas != b.replicas:
                errors.append(FieldError(child(at, "replicas"), immutable))
    if before.managed_by != after.managed_by:
        errors.append(FieldError("spec.managedBy", immutable))
    return errors
