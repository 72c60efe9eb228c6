"""Label selectors, node selector terms and tolerations, matched as Kubernetes matches them."""

from __future__ import annotations

from typing import Any, Mapping

Obj = Mapping[str, Any]


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _requirement(labels: Mapping[str, str], expr: Mapping[str, Any], *, numeric: bool) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if numeric and op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector; an empty selector matches everything, None matches nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement(labels, e, numeric=False) for e in selector.get("matchExpressions") or [])


def node_selector_term_matches(term: Mapping[str, Any], node: Obj) -> bool:
    """One NodeSelectorTerm: all its expressions and fields must match; an empty term matches nothing."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    labels = _labels(node)
    name = {"metadata.name": (node.get("metadata") or {}).get("name", "")}
    return all(_requirement(labels, e, numeric=True) for e in exprs) and all(
        _requirement(name, f, numeric=False) for f in fields
    )


def node_matches_pod_affinity(pod: Obj, node: Obj) -> bool:
    """spec.nodeSelector and requiredDuringSchedulingIgnoredDuringExecution (terms are ORed)."""
    spec = pod.get("spec") or {}
    labels = _labels(node)
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {})
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    return any(node_selector_term_matches(t, node) for t in terms)


def preferred_affinity_score(pod: Obj, node: Obj) -> int:
    spec = pod.get("spec") or {}
    preferred = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    ) or [])
    return sum(int(p.get("weight", 0)) for p in preferred if node_selector_term_matches(p.get("preference") or {}, node))


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """v1.Toleration.ToleratesTaint: empty effect matches all effects; Exists with no key matches all keys."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(pod: Obj, node: Obj, effects: tuple[str, ...]) -> list[Mapping[str, Any]]:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    taints = (node.get("spec") or {}).get("taints") or []
    return [
        taint
        for taint in taints
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations)
    ]
