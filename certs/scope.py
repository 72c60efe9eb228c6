"""Which namespaces the product's webhooks are called for, from the one source: the policy.

The policy's `managedNamespaces.selector` (team namespaces opt in by a label) and its exempt
namespaces decide where the gateway polices; the webhook configurations' namespaceSelector must
describe the same set, or the API server calls the gateway where it has nothing to do (and a dead
gateway blocks work it never polices). Nobody edits the selector in the configurations: the keeper
(certs/keeper.py) writes what `namespace_selector` says into every policy-governed webhook.
Pure: a function of the policy and the configurations as read.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from batchgate.keys import BREAK_GLASS_ANNOTATION
from batchgate.policy import Policy

NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every Namespace, so a NotIn on it keeps named namespaces out."""
POLICY_WEBHOOK = "policy.validate.batchgate.dev"
"""Guards the policy ConfigMap in the product's own namespace: never governed by the policy."""


def namespace_selector(policy: Policy) -> dict[str, Any]:
    """The namespaceSelector for the namespaces `policy` manages: its selector, minus the exempt ones."""
    wire = policy.managed_namespaces.selector.to_wire()
    expressions = [{k: v for k, v in e.items() if k != "values" or v} for e in wire.get("matchExpressions", [])]
    expressions.append({"key": NAME_LABEL, "operator": "NotIn", "values": sorted(policy.exempt.namespaces)})
    selector: dict[str, Any] = {"matchExpressions": expressions}
    if wire.get("matchLabels"):
        selector["matchLabels"] = wire["matchLabels"]
    return selector


def governed(hook: dict[str, Any]) -> bool:
    """Whether the policy decides where `hook` is called: namespaced rules, not the policy's own guard."""
    rules: Iterable[dict[str, Any]] = hook.get("rules") or []
    cluster_only = all(rule.get("scope") == "Cluster" for rule in rules)
    return hook.get("name") != POLICY_WEBHOOK and not cluster_only


def _normal(selector: dict[str, Any] | None) -> dict[str, Any]:
    """A selector as the API server may return it: empty lists and maps dropped, for comparison."""
    selector = selector or {}
    out: dict[str, Any] = {}
    if selector.get("matchLabels"):
        out["matchLabels"] = dict(selector["matchLabels"])
    expressions = [{k: v for k, v in e.items() if v not in (None, [])} for e in selector.get("matchExpressions") or []]
    if expressions:
        out["matchExpressions"] = expressions
    return out


def stale_selectors(hooks: list[dict[str, Any]], wanted: dict[str, Any]) -> list[int]:
    """Indexes of the governed hooks whose namespaceSelector is not `wanted`."""
    return [i for i, hook in enumerate(hooks) if governed(hook) and _normal(hook.get("namespaceSelector")) != _normal(wanted)]


POD_WEBHOOK = "pods.validate.batchgate.dev"
"""The validating webhook for Pods, narrowed by `pod_match_conditions`."""


def _cel_strings(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in sorted(set(values))) + "]"


def pod_match_conditions(policy: Policy) -> list[dict[str, str]]:
    """matchConditions that send the pods webhook every Pod CREATE the gateway could refuse.

    The gateway refuses a Pod only on CREATE and only for its kind (webhook/rules/validation.py:
    Pod is no queued workload, so identity, queue and shape rules never apply to it), and never
    one from an exempt sender or one a workload controller makes for the owner it names ("other"
    scope). Those are dropped; every other pod is sent whatever allowedKinds says, so the
    conditions stay a superset when allowedKinds changes and nobody has rewritten them.
    """
    user = "request.userInfo.username"
    conditions: list[dict[str, str]] = []
    if policy.exempt.users:
        conditions.append({"name": "sender-not-exempt", "expression": f"!({user} in {_cel_strings(policy.exempt.users)})"})
    if policy.exempt.groups:
        groups = _cel_strings(policy.exempt.groups)
        conditions.append({"name": "groups-not-exempt",
                           "expression": f"!request.userInfo.groups.exists(g, g in {groups})"})
    # An AppWrapper controller's pod owned by an AppWrapper is a component (allowedKinds.wrapped).
    only_workload_controllers = set(policy.controllers.workloads) - set(policy.controllers.app_wrapper)
    if only_workload_controllers:
        owned = ("has(object.metadata.ownerReferences) && "
                 "object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller == true)")
        conditions.append({"name": "not-made-by-a-workload-controller", "expression":
                           f"!({owned} && {user} in {_cel_strings(only_workload_controllers)})"})
    return conditions


BREAK_GLASS_CONDITION = {"name": "not-break-glass", "expression": (
    "!('system:masters' in request.userInfo.groups && has(object.metadata.annotations) "
    f"&& '{BREAK_GLASS_ANNOTATION}' in object.metadata.annotations)")}
"""A cluster admin's object marked for break-glass skips the webhook (docs/webhook.md)."""


def policy_match_conditions(configmap: tuple[str, str]) -> list[dict[str, str]]:
    """matchConditions that send the policy webhook the policy ConfigMap (namespace, name) alone,
    as the gateway's and the keeper's `--policy-configmap` name it: every other ConfigMap of its
    namespace (kube-root-ca.crt, a dashboard's) is written with the gateway down too. Its
    namespace is the webhook's namespaceSelector; a break-glass edit skips it as well."""
    _, name = configmap
    return [{"name": "the-policy-configmap",
             "expression": f"has(object.metadata.name) && object.metadata.name == {json.dumps(name)}"},
            BREAK_GLASS_CONDITION]


def stale_conditions(hooks: list[dict[str, Any]], webhook: str, wanted: list[dict[str, str]]) -> list[int]:
    """Indexes of the hooks named `webhook` whose matchConditions are not `wanted`: the keeper
    rewrites them, so a sender taken out of the policy's exemptions is policed again
    (pod_match_conditions) and the policy webhook follows the ConfigMap it guards
    (policy_match_conditions)."""
    return [i for i, hook in enumerate(hooks)
            if hook.get("name") == webhook and (hook.get("matchConditions") or []) != wanted]
