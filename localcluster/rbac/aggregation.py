"""ClusterRole aggregation: an aggregated role's rules are the union of the rules of every
ClusterRole its selectors match, in name order, without duplicates.

Follows kubernetes/kubernetes pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from localcluster.rbac.authorizer import Role
from localcluster.rbac.rules import PolicyRule


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions) against a role's labels."""
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, dict) or any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            return False
        key, op, values = str(expr.get("key") or ""), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def aggregated_rules(role: Role, cluster_roles: Mapping[str, Role]) -> tuple[PolicyRule, ...]:
    """The rules `role` (which has an aggregationRule) should hold now."""
    rules: list[PolicyRule] = []
    for selector in role.aggregation or ():
        for name in sorted(cluster_roles):
            other = cluster_roles[name]
            if name == role.name or not selector_matches(selector, other.labels):
                continue
            rules.extend(r for r in other.rules if r not in rules)
    return tuple(rules)


def aggregation_updates(cluster_roles: Mapping[str, Role]) -> dict[str, tuple[PolicyRule, ...]]:
    """Aggregated roles whose rules differ from what their selectors gather: name -> new rules.

    Applied until nothing changes, so that chains (view into edit into admin) settle.
    """
    roles = dict(cluster_roles)
    changed: dict[str, tuple[PolicyRule, ...]] = {}
    for _ in range(len(roles) + 1):
        step = {name: rules for name, role in sorted(roles.items()) if role.aggregation is not None
                for rules in [aggregated_rules(role, roles)] if rules != role.rules}
        if not step:
            return changed
        for name, rules in step.items():
            old = roles[name]
            roles[name] = Role(old.name, old.namespace, rules, old.labels, old.aggregation)
            changed[name] = rules
    return changed
