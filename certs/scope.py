"""Which namespaces the product's webhooks are called for, from the one source: the policy.

The policy's `managedNamespaces.selector` (team namespaces opt in by a label) and its exempt
namespaces decide where the gateway polices; the webhook configurations' namespaceSelector must
describe the same set, or the API server calls the gateway where it has nothing to do (and a dead
gateway blocks work it never polices). Nobody edits the selector in the configurations: the keeper
(certs/keeper.py) writes what `namespace_selector` says into every policy-governed webhook.
Pure: a function of the policy and the configurations as read.
"""

from __future__ import annotations

from typing import Any, Iterable

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
