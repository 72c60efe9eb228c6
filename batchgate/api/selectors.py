"""Kubernetes label selectors (metav1.LabelSelector): parse once, then match label maps."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Mapping

from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.kueue_fields import string_map
from batchgate.frozen import frozen

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values


@frozen
class LabelSelector:
    """All requirements must hold; the empty selector matches everything."""

    match_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        return all(req.matches(labels) for req in self.match_expressions)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [
                {"key": r.key, "operator": r.operator, "values": list(r.values)}
                for r in self.match_expressions
            ]
        return out


def parse_label_selector(value: Any, path: str) -> LabelSelector:
    """Parse a wire selector; None and {} both mean "everything"."""
    if value is None:
        return LabelSelector()
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a label selector mapping, got {type_name(value)}")
    unknown = sorted(set(value) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise FieldError(child(path, unknown[0]), "unknown field (expected matchLabels, matchExpressions)")
    labels = string_map(value.get("matchLabels"), child(path, "matchLabels"))
    raw_exprs = value.get("matchExpressions") or []
    exprs_path = child(path, "matchExpressions")
    if not isinstance(raw_exprs, list):
        raise FieldError(exprs_path, f"must be a list, got {type_name(raw_exprs)}")
    return LabelSelector(
        MappingProxyType(labels),
        tuple(_requirement(e, child(exprs_path, i)) for i, e in enumerate(raw_exprs)),
    )


def _requirement(value: Any, path: str) -> Requirement:
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a mapping, got {type_name(value)}")
    unknown = sorted(set(value) - {"key", "operator", "values"})
    if unknown:
        raise FieldError(child(path, unknown[0]), "unknown field (expected key, operator, values)")
    key = value.get("key")
    if not isinstance(key, str) or not key:
        raise FieldError(child(path, "key"), "must be a non-empty string")
    operator = value.get("operator")
    if operator not in _OPERATORS:
        raise FieldError(child(path, "operator"), f"must be one of {', '.join(_OPERATORS)}")
    values = value.get("values") or []
    values_path = child(path, "values")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise FieldError(values_path, "must be a list of strings")
    if operator in ("In", "NotIn") and not values:
        raise FieldError(values_path, f"must be non-empty for operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise FieldError(values_path, f"must be empty for operator {operator}")
    return Requirement(key, operator, tuple(values))
