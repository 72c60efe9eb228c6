"""Escalation prevention: a writer may only grant what it already holds.

Follows kubernetes/kubernetes pkg/registry/rbac/validation/policy_comparator.go (Covers,
BreakdownRule, ruleCovers, resourceCoversAll), policy_compact.go (CompactRules),
pkg/apis/rbac/v1/evaluation_helpers.go (CompactString) and rule.go (ConfirmNoEscalation's
message). The `escalate` and `bind` verbs and system:masters bypass this check; the API server
asks the authorizer about those before calling `missing_rights`.
"""

from __future__ import annotations

from collections.abc import Iterable

from localcluster.rbac.rules import ALL, PolicyRule


def breakdown(rule: PolicyRule) -> list[PolicyRule]:
    """One rule per group x resource x verb (x name), and per URL x verb."""
    out: list[PolicyRule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    out.extend(PolicyRule((verb,), (group,), (resource,), (name,)) for name in rule.resource_names)
                else:
                    out.append(PolicyRule((verb,), (group,), (resource,)))
    for url in rule.non_resource_urls:
        out.extend(PolicyRule((verb,), non_resource_urls=(url,)) for verb in rule.verbs)
    return out


def _resources_cover(owned: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    if ALL in owned:
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owned: str, wanted: str) -> bool:
    return owned == wanted or (owned.endswith("*") and wanted.startswith(owned.rstrip("*")))


def rule_covers(owner: PolicyRule, wanted: PolicyRule) -> bool:
    verbs = ALL in owner.verbs or set(wanted.verbs) <= set(owner.verbs)
    groups = ALL in owner.api_groups or set(wanted.api_groups) <= set(owner.api_groups)
    urls = all(any(_url_covers(o, w) for o in owner.non_resource_urls) for w in wanted.non_resource_urls)
    if wanted.resource_names:
        names = not owner.resource_names or set(wanted.resource_names) <= set(owner.resource_names)
    else:
        names = not owner.resource_names
    return verbs and groups and _resources_cover(owner.resources, wanted.resources) and names and urls


def missing_rights(owned: Iterable[PolicyRule], wanted: Iterable[PolicyRule]) -> list[PolicyRule]:
    """The broken-down parts of `wanted` that no owned rule covers."""
    owned = list(owned)
    return [part for rule in wanted for part in breakdown(rule) if not any(rule_covers(o, part) for o in owned)]


def compact(rules: list[PolicyRule]) -> list[PolicyRule]:
    """Merge the verbs of rules naming one group, one resource and at most one name."""
    merged: dict[tuple[str, str, tuple[str, ...]], PolicyRule] = {}
    others = []
    for rule in rules:
        simple = (len(rule.api_groups) == 1 and len(rule.resources) == 1 and len(rule.resource_names) <= 1
                  and not rule.non_resource_urls and rule.verbs)
        if not simple:
            others.append(rule)
            continue
        key = (rule.api_groups[0], rule.resources[0], rule.resource_names)
        found = merged.get(key)
        merged[key] = rule if found is None else PolicyRule(found.verbs + rule.verbs, found.api_groups,
                                                            found.resources, found.resource_names)
    return others + list(merged.values())


def _go_quoted(values: tuple[str, ...]) -> str:
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def compact_string(rule: PolicyRule) -> str:
    """`{APIGroups:[""], Resources:["secrets"], Verbs:["create"]}`, as rbacv1helpers.CompactString."""
    parts = [f"{label}:{_go_quoted(values)}" for label, values in (
        ("APIGroups", rule.api_groups), ("Resources", rule.resources), ("NonResourceURLs", rule.non_resource_urls),
        ("ResourceNames", rule.resource_names), ("Verbs", rule.verbs)) if values]
    return "{" + ", ".join(parts) + "}"


def escalation_message(username: str, groups: tuple[str, ...], missing: list[PolicyRule],
                       errors: list[str]) -> str:
    """ConfirmNoEscalation's error: who, and each permission they lack, one per line."""
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (f'user "{username}" (groups={_go_quoted(groups)}) is attempting to grant RBAC permissions '
               "not currently held:\n" + "\n".join(lines))
    if errors:
        message += f"; resolution errors: [{', '.join(errors)}]"
    return message
