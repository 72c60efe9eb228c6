"""The pods webhook's matchConditions send every Pod the gateway would refuse, and drop the rest.

The conditions (certs/scope.py, shipped in manifests/webhook/gateway.yaml) are evaluated with the
local cluster's kube-apiserver-faithful CEL matcher; the gateway's verdict comes from its pure
rules (webhook.rules.validate). Superset: whenever the rules refuse a pod, the conditions hold.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate.policy import DEFAULT_POLICY, AllowedKinds, Policy
from certs.scope import POD_WEBHOOK, pod_match_conditions
from localcluster.apiserver.admission_match import conditions_hold
from tests.manifests.kustomize import webhook_documents
from webhook.rules import validate
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

AW_CONTROLLER = DEFAULT_POLICY.controllers.app_wrapper[0]
KCM = "system:kube-controller-manager"
RS_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
TRAINING = "system:serviceaccount:kubeflow:training-operator"
KUBERAY = "system:serviceaccount:ray-system:kuberay-operator"
ALICE = "alice"


def without_pod(kinds: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(k for k in kinds if k != "Pod")


KINDS = DEFAULT_POLICY.allowed_kinds
POLICIES = {
    "the shipped policy": DEFAULT_POLICY,
    "a policy refusing bare pods": replace(DEFAULT_POLICY, allowed_kinds=replace(KINDS, top_level=without_pod(KINDS.top_level))),
    "a policy refusing component pods": replace(DEFAULT_POLICY, allowed_kinds=replace(KINDS, wrapped=without_pod(KINDS.wrapped))),
    "a policy refusing all pods": replace(DEFAULT_POLICY, allowed_kinds=AllowedKinds(
        top_level=without_pod(KINDS.top_level), wrapped=without_pod(KINDS.wrapped))),
    "a policy refusing bare pods with exempt admins": replace(
        DEFAULT_POLICY, allowed_kinds=replace(KINDS, top_level=without_pod(KINDS.top_level)),
        exempt=replace(DEFAULT_POLICY.exempt, users=("admin",), groups=("ops",))),
}


def owner(kind: str, api_version: str, controller: bool | None = True) -> dict[str, Any]:
    ref = {"apiVersion": api_version, "kind": kind, "name": "w", "uid": "u-1"}
    return ref if controller is None else {**ref, "controller": controller}


def pod(owners: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "team-a"}
    if owners is not None:
        meta["ownerReferences"] = owners
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


AW = ("AppWrapper", "workload.codeflare.dev/v1beta2")
PODS = {
    "a DaemonSet's pod": (pod([owner("DaemonSet", "apps/v1")]), KCM),
    "a ReplicaSet's pod": (pod([owner("ReplicaSet", "apps/v1")]), RS_CONTROLLER),
    "a queued Job's pod": (pod([owner("Job", "batch/v1")], {"batch.kubernetes.io/job-name": "j"}), KCM),
    "a PyTorchJob's pod": (pod([owner("PyTorchJob", "kubeflow.org/v1")], {"training.kubeflow.org/job-name": "t"}), TRAINING),
    "a RayCluster's pod": (pod([owner("RayCluster", "ray.io/v1")], {"ray.io/cluster": "r"}), KUBERAY),
    "an AppWrapper component pod": (pod([owner(*AW)]), AW_CONTROLLER),
    "a pod the AppWrapper controller makes for another owner": (pod([owner("Job", "batch/v1")]), AW_CONTROLLER),
    "a user's bare pod": (pod(), ALICE),
    "a user's pod naming a ReplicaSet it was not made by": (pod([owner("ReplicaSet", "apps/v1")]), ALICE),
    "a user's pod naming a non-controller owner": (pod([owner("ReplicaSet", "apps/v1", controller=False)]), ALICE),
    "a pod a controller makes with no controller owner": (pod([owner("ReplicaSet", "apps/v1", controller=None)]), KCM),
    "an exempt admin's bare pod": (pod(), "admin"),
}


def request_for(obj: dict[str, Any], username: str, groups: tuple[str, ...] = ()) -> AdmissionRequest:
    return AdmissionRequest(uid="1", kind=GroupVersionKind("", "v1", "Pod"), operation="CREATE",
                            user=UserInfo(username=username, groups=groups), namespace="team-a", name="p",
                            resource="pods", object=obj)


def sent(policy: Policy, obj: dict[str, Any], username: str, groups: tuple[str, ...] = ()) -> bool:
    """What the API server decides from the conditions, given the review's request."""
    review = {"operation": "CREATE", "namespace": "team-a", "object": obj, "oldObject": None,
              "userInfo": {"username": username, "groups": list(groups)}}
    return conditions_hold(pod_match_conditions(policy), review)


def refused(policy: Policy, obj: dict[str, Any], username: str, groups: tuple[str, ...] = ()) -> bool:
    return not validate(request_for(obj, username, groups), policy).allowed


CASES = [pytest.param(p, o, u, id=f"{pod_name} under {policy_name}")
         for policy_name, p in POLICIES.items() for pod_name, (o, u) in PODS.items()]


@pytest.mark.parametrize(("policy", "obj", "username"), CASES)
def test_every_pod_the_gateway_refuses_reaches_it(policy: Policy, obj: dict[str, Any], username: str) -> None:
    assert sent(policy, obj, username) or not refused(policy, obj, username)


@pytest.mark.parametrize("policy", list(POLICIES.values()), ids=list(POLICIES))
@pytest.mark.parametrize("pod_name", ["a DaemonSet's pod", "a ReplicaSet's pod", "a queued Job's pod",
                                      "a PyTorchJob's pod", "a RayCluster's pod"])
def test_a_workload_controllers_pods_never_reach_the_gateway(policy: Policy, pod_name: str) -> None:
    assert not sent(policy, *PODS[pod_name])


def test_a_bare_pod_reaches_the_gateway_when_the_policy_refuses_it() -> None:
    policy = POLICIES["a policy refusing bare pods"]
    assert refused(policy, *PODS["a user's bare pod"]) and sent(policy, *PODS["a user's bare pod"])


def test_an_exempt_senders_pods_never_reach_the_gateway() -> None:
    policy = POLICIES["a policy refusing bare pods with exempt admins"]
    assert not sent(policy, pod(), "admin") and not sent(policy, pod(), ALICE, ("ops",))


def test_the_shipped_webhook_sends_pod_creates_only() -> None:
    """Its conditions are checked against the shipped policy ConfigMap in test_install_overlays.py."""
    (config,) = [d for d in webhook_documents() if d["kind"] == "ValidatingWebhookConfiguration"]
    (hook,) = [h for h in config["webhooks"] if h["name"] == POD_WEBHOOK]
    assert [r["operations"] for r in hook["rules"]] == [["CREATE"]]


USERS = st.sampled_from([ALICE, KCM, RS_CONTROLLER, TRAINING, KUBERAY, AW_CONTROLLER, "admin"])
OWNER = st.builds(owner, st.sampled_from(["ReplicaSet", "Job", "AppWrapper", "DaemonSet", "RayCluster"]),
                  st.sampled_from(["apps/v1", "batch/v1", "workload.codeflare.dev/v1beta2", "ray.io/v1"]),
                  st.sampled_from([True, False, None]))
PODS_GEN = st.builds(pod, st.one_of(st.none(), st.lists(OWNER, max_size=3)),
                     st.one_of(st.none(), st.dictionaries(st.sampled_from(["app", "ray.io/cluster", "batchgate.dev/framework"]),
                                                          st.sampled_from(["a", "b"]), max_size=2)))


@settings(max_examples=300, deadline=None)
@given(policy=st.sampled_from(list(POLICIES.values())), obj=PODS_GEN, username=USERS,
       groups=st.lists(st.sampled_from(["ops", "devs", "system:authenticated"]), max_size=2).map(tuple))
def test_the_conditions_are_a_superset_of_what_the_rules_refuse(policy: Policy, obj: dict[str, Any], username: str,
                                                                 groups: tuple[str, ...]) -> None:
    assert sent(policy, obj, username, groups) or not refused(policy, obj, username, groups)
