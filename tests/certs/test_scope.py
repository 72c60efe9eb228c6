"""The webhook configurations' namespaceSelector comes from the policy and nowhere else.

We test these aspects: the selector a policy yields (opt-in label, exempt namespaces kept out),
which webhooks the policy governs, and which hooks are stale; and that the selector matches
exactly the namespaces the gateway itself polices (one source, checked with the local cluster's
kube-apiserver-faithful matcher against the gateway's own decision).
"""

from __future__ import annotations

import pytest

from batchgate.api.selectors import parse_label_selector
from batchgate.keys import BREAK_GLASS_ANNOTATION
from batchgate.policy import DEFAULT_POLICY_CONFIGMAP, parse_policy
from certs.scope import (POLICY_WEBHOOK, governed, namespace_selector, policy_match_conditions, stale_conditions,
                         stale_selectors)
from localcluster.apiserver.admission_match import conditions_hold
from webhook.rules.policy_configmap import is_policy_configmap

OPT_IN = parse_policy("managedNamespaces:\n  selector: {matchLabels: {mlbatch-team-namespace: 'true'}}\n")
EVERYWHERE = parse_policy("")


def matches(selector: dict, name: str, labels: dict[str, str]) -> bool:
    return parse_label_selector(selector, "namespaceSelector").matches({**labels, "kubernetes.io/metadata.name": name})


@pytest.mark.parametrize("policy, name, labels, called", [
    pytest.param(OPT_IN, "team-a", {"mlbatch-team-namespace": "true"}, True, id="an opted-in team namespace is called"),
    pytest.param(OPT_IN, "monitoring", {}, False, id="a namespace without the label is never called"),
    pytest.param(OPT_IN, "kube-system", {"mlbatch-team-namespace": "true"}, False,
                 id="a system namespace is never called even when labelled"),
    pytest.param(OPT_IN, "batchgate-system", {"mlbatch-team-namespace": "true"}, False,
                 id="the product's own namespace is never called"),
    pytest.param(EVERYWHERE, "monitoring", {}, True, id="the empty selector calls every namespace not exempt"),
    pytest.param(EVERYWHERE, "kube-node-lease", {}, False, id="the empty selector still keeps exempt namespaces out"),
])
def test_the_selector_describes_the_managed_namespaces(policy, name: str, labels: dict, called: bool) -> None:
    assert matches(namespace_selector(policy), name, labels) is called
    managed = policy.managed_namespaces.selector.matches(labels) and name not in policy.exempt.namespaces
    assert managed is called, "the gateway's own notion of managed must agree"


@pytest.mark.parametrize("hook, is_governed", [
    pytest.param({"name": "workloads.validate.batchgate.dev", "rules": [{"resources": ["jobs"]}]}, True,
                 id="the workloads webhook is governed"),
    pytest.param({"name": POLICY_WEBHOOK, "rules": [{"resources": ["configmaps"]}]}, False,
                 id="the policy ConfigMap's guard is not"),
    pytest.param({"name": "clusterqueues.validate.batchgate.dev", "rules": [{"scope": "Cluster"}]}, False,
                 id="a cluster-scoped webhook is not"),
])
def test_which_webhooks_the_policy_governs(hook: dict, is_governed: bool) -> None:
    assert governed(hook) is is_governed


def test_only_governed_hooks_with_another_selector_are_stale() -> None:
    wanted = namespace_selector(OPT_IN)
    hooks = [{"name": "a", "rules": [{}], "namespaceSelector": wanted},
             {"name": "b", "rules": [{}], "namespaceSelector": {"matchLabels": {}, **wanted}},
             {"name": "c", "rules": [{}]},
             {"name": POLICY_WEBHOOK, "rules": [{}], "namespaceSelector": {}}]
    assert stale_selectors(hooks, wanted) == [2]


ADMIN = ("system:masters", "system:authenticated")


@pytest.mark.parametrize("metadata, groups, sent", [
    pytest.param({"name": "batchgate-policy"}, (), True, id="the policy ConfigMap is sent"),
    pytest.param({"name": "kube-root-ca.crt"}, (), False, id="the root CA every pod mounts never waits on the gateway"),
    pytest.param({"name": "grafana-dashboard"}, (), False, id="nor does any other ConfigMap of the namespace"),
    pytest.param({"generateName": "cm-"}, (), False, id="a ConfigMap without a name yet is skipped, not an error"),
    pytest.param({"name": "batchgate-policy", "annotations": {BREAK_GLASS_ANNOTATION: "gateway down"}}, ADMIN, False,
                 id="a cluster admin's break-glass edit of the policy skips it"),
    pytest.param({"name": "batchgate-policy", "annotations": {BREAK_GLASS_ANNOTATION: "me too"}}, ("dev",), True,
                 id="anyone else's break-glass mark does not"),
])
def test_the_policy_webhook_is_sent_the_policy_configmap_alone(metadata: dict, groups: tuple, sent: bool) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**metadata, "namespace": "batchgate-system"}}
    review = {"operation": "UPDATE", "namespace": "batchgate-system", "object": obj, "oldObject": obj,
              "userInfo": {"username": "someone", "groups": list(groups)}}
    assert conditions_hold(policy_match_conditions(DEFAULT_POLICY_CONFIGMAP), review) is sent
    if not sent and "annotations" not in metadata:  # what it skips, the gateway would not check as a policy
        assert not is_policy_configmap("ConfigMap", "batchgate-system", obj, DEFAULT_POLICY_CONFIGMAP)


def test_the_policy_webhook_follows_the_configmap_it_guards() -> None:
    other = policy_match_conditions(("ops", "our-policy"))
    hooks = [{"name": POLICY_WEBHOOK, "matchConditions": policy_match_conditions(DEFAULT_POLICY_CONFIGMAP)},
             {"name": "pods.validate.batchgate.dev", "matchConditions": []}]
    assert stale_conditions(hooks, POLICY_WEBHOOK, other) == [0]
    assert stale_conditions(hooks, POLICY_WEBHOOK, policy_match_conditions(DEFAULT_POLICY_CONFIGMAP)) == []
