"""PolicyRule and request attributes, and whether one rule allows one request.

Semantics follow kubernetes/kubernetes pkg/apis/rbac/v1/evaluation_helpers.go (VerbMatches,
APIGroupMatches, ResourceMatches, ResourceNameMatches, NonResourceURLMatches) and
plugin/pkg/auth/authorizer/rbac/rbac.go (RuleAllows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ALL = "*"


def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings from a stored rule; anything else grants nothing (as an empty list)."""
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))


@dataclass(frozen=True)
class PolicyRule:
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Any) -> PolicyRule:
        if not isinstance(rule, dict):
            return cls()
        return cls(_strings(rule.get("verbs")), _strings(rule.get("apiGroups")), _strings(rule.get("resources")),
                   _strings(rule.get("resourceNames")), _strings(rule.get("nonResourceURLs")))

    def to_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, value in (("verbs", self.verbs), ("apiGroups", self.api_groups), ("resources", self.resources),
                           ("resourceNames", self.resource_names), ("nonResourceURLs", self.non_resource_urls)):
            if value or key == "verbs":
                out[key] = list(value)
        return out


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (apiserver's authorizer.Attributes, without the user)."""

    verb: str
    resource_request: bool = True
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # non-resource requests only


def verb_matches(rule: PolicyRule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def api_group_matches(rule: PolicyRule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def resource_matches(rule: PolicyRule, combined: str, subresource: str) -> bool:
    """`*`, the exact `resource[/subresource]`, or `*/subresource` for any resource's subresource."""
    for wanted in rule.resources:
        if wanted == ALL or wanted == combined:
            return True
        if subresource and wanted == "*/" + subresource:
            return True
    return False


def resource_name_matches(rule: PolicyRule, name: str) -> bool:
    """No resourceNames means every name; otherwise the request must name one of them."""
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url == ALL or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: PolicyRule) -> bool:
    if attrs.resource_request:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (verb_matches(rule, attrs.verb) and api_group_matches(rule, attrs.api_group)
                and resource_matches(rule, combined, attrs.subresource)
                and resource_name_matches(rule, attrs.name))
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)
