"""A pod's node selector and required node affinity, parsed once; matched against node labels.

kube-scheduler's NodeAffinity filter (gang placement) and Kueue's flavor assigner (a
ResourceFlavor's nodeLabels standing in for a node) read the same parsed value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from batchgate.api import kueue_fields as f
from batchgate.api.errors import FieldError
from batchgate.frozen import frozen

__all__ = ["NodeSelectorRequirement", "NodeSelectorTerm", "NodeAffinity", "parse_node_affinity"]

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_REQUIRED = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One matchExpressions / matchFields entry of a required node affinity term."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if not present or len(self.values) != 1:
            return False
        try:
            have, bound = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > bound if self.operator == "Gt" else have < bound


@dataclass(frozen=True)
class NodeSelectorTerm:
    expressions: tuple[NodeSelectorRequirement, ...] = ()
    fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str], name: str = "") -> bool:
        """An empty term matches nothing (the API server's NodeSelector semantics)."""
        if not self.expressions and not self.fields:
            return False
        names = {"metadata.name": name}
        return all(r.matches(labels) for r in self.expressions) and all(r.matches(names) for r in self.fields)


@frozen
class NodeAffinity:
    """`spec.nodeSelector` and the required node affinity terms (None: no required affinity)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] | None = None

    def matches(self, labels: Mapping[str, str], name: str = "") -> bool:
        """kube-scheduler's GetRequiredNodeAffinity(pod).Match: the selector and any one term."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        return self.required_terms is None or any(t.matches(labels, name) for t in self.required_terms)

    def restricted_to(self, keys: frozenset[str]) -> "NodeAffinity":
        """Kueue's flavorSelector: only selector entries and match expressions on `keys` are kept;
        a term left without expressions drops the whole affinity (terms are ORed, so it matches any
        flavor)."""
        selector = tuple((k, v) for k, v in self.node_selector if k in keys)
        terms: list[NodeSelectorTerm] | None = None
        if self.required_terms:
            terms = []
            for term in self.required_terms:
                kept = tuple(e for e in term.expressions if e.key in keys)
                if not kept:
                    terms = None
                    break
                terms.append(NodeSelectorTerm(kept))
        return NodeAffinity(selector, tuple(terms) if terms else None)


def parse_node_affinity(spec: Mapping[str, Any], path: str) -> NodeAffinity:
    """The pod spec at `path` -> NodeAffinity; bad input raises FieldError naming the field path."""
    selector = f.string_map(spec.get("nodeSelector"), f.join(path, "nodeSelector"))
    affinity = f.mapping(f.mapping(spec.get("affinity"), f.join(path, "affinity")).get("nodeAffinity"),
                         f.join(path, "affinity", "nodeAffinity"))
    required_path = f.join(path, *_REQUIRED.split("."))
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = None
    if required is not None:
        raw_terms = f.sequence(f.mapping(required, required_path).get("nodeSelectorTerms"),
                               f.join(required_path, "nodeSelectorTerms"))
        terms = tuple(_term(t, f.join(required_path, "nodeSelectorTerms", i)) for i, t in enumerate(raw_terms))
    return NodeAffinity(tuple(sorted(selector.items())), terms)


def _term(raw: Any, path: str) -> NodeSelectorTerm:
    term = f.mapping(raw, path, required=True)
    return NodeSelectorTerm(
        tuple(_requirement(e, f.join(path, "matchExpressions", i))
              for i, e in enumerate(f.sequence(term.get("matchExpressions"), f.join(path, "matchExpressions")))),
        tuple(_requirement(e, f.join(path, "matchFields", i))
              for i, e in enumerate(f.sequence(term.get("matchFields"), f.join(path, "matchFields")))),
    )


def _requirement(raw: Any, path: str) -> NodeSelectorRequirement:
    expr = f.mapping(raw, path, required=True)
    operator = expr.get("operator")
    if operator not in _OPERATORS:
        raise FieldError(f.join(path, "operator"), f"must be one of {', '.join(_OPERATORS)}, got {operator!r}")
    values = f.sequence(expr.get("values"), f.join(path, "values"))
    if not all(isinstance(v, str) for v in values):
        raise FieldError(f.join(path, "values"), "must be a list of strings")
    return NodeSelectorRequirement(f.string(expr.get("key"), f.join(path, "key")), operator, tuple(values))
