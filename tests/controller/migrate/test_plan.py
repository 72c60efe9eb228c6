"""What `batchgate migrate plan` takes over, cannot take over, and what blocks it, and the order
`apply` works in: tables over the objects a reader lists.

We test these aspects: the old controllers are found by what their webhooks act on (not by name),
queues and Workloads are taken over with their state, pending ones in queue order, a CRD storing a
version batchgate does not serve is moved first, each blocker is named, and apply's steps never
leave the old webhooks or managers running once a CRD is handed over.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from batchgate.api.kueue import ClusterQueue, FlavorFungibility
from controller.migrate.plan import (
    ClusterObjects, Handover, Plan, Ref, StorageMove, plan_migration, storage_version_hash,
)
from controller.migrate.steps import Blocked, HandOverCrd, MoveStorage, RemoveWebhook, StopManager, describe, steps

SERVED = {"workloads.kueue.x-k8s.io": "v1beta1", "clusterqueues.kueue.x-k8s.io": "v1beta1",
          "appwrappers.workload.codeflare.dev": "v1beta2"}


def webhook(name: str, namespace: str, groups: list[str], kind: str = "ValidatingWebhookConfiguration",
            batchgate: bool = False) -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": "batchgate"} if batchgate else {}
    return {"kind": kind, "metadata": {"name": name, "labels": labels}, "webhooks": [
        {"name": f"{name}.hook", "clientConfig": {"service": {"namespace": namespace, "name": "svc"}},
         "rules": [{"apiGroups": groups, "resources": ["*"]}]}]}


def deployment(name: str, namespace: str) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": name, "namespace": namespace}}


def crd(name: str, stored: list[str], conversion: str = "None", served: tuple[str, ...] = ()) -> dict[str, Any]:
    """A CRD storing new objects in the last of `stored`, serving it and `served`."""
    versions = [{"name": v, "served": True, "storage": v == stored[-1]} for v in dict.fromkeys((*served, stored[-1]))]
    return {"metadata": {"name": name}, "spec": {"conversion": {"strategy": conversion}, "versions": versions},
            "status": {"storedVersions": stored}}


def workload(name: str, *, admitted: bool = False, reserved: bool = False, priority: int = 0,
             created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    conditions = []
    if reserved or admitted:
        conditions.append({"type": "QuotaReserved", "status": "True"})
    if admitted:
        conditions.append({"type": "Admitted", "status": "True"})
    return {"metadata": {"name": name, "namespace": "team-a", "creationTimestamp": created, "uid": name},
            "spec": {"queueName": "q", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
            "status": {"conditions": conditions}}


def cluster_queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def appwrapper(name: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team-a"}, "status": {"phase": phase}}


KUEUE = webhook("kueue-validating-webhook-configuration", "kueue-system", ["kueue.x-k8s.io"])
APPWRAPPER = webhook("appwrapper-mutating-webhook-configuration", "appwrapper-system", ["workload.codeflare.dev"],
                     kind="MutatingWebhookConfiguration")
MLBATCH = ClusterObjects(
    crds=[crd("workloads.kueue.x-k8s.io", ["v1beta2"], "Webhook", ("v1beta1",)),
          crd("appwrappers.workload.codeflare.dev", ["v1beta2"]),
          crd("cohorts.kueue.x-k8s.io", ["v1beta2"], "Webhook", ("v1beta1",))],
    webhooks=[KUEUE, APPWRAPPER, webhook("cert-manager-webhook", "cert-manager", ["cert-manager.io"])],
    deployments=[deployment("kueue-controller-manager", "kueue-system"),
                 deployment("appwrapper-controller-manager", "appwrapper-system"),
                 deployment("cert-manager", "cert-manager")],
    cluster_queues=[cluster_queue("team-a-cq")],
    local_queues=[{"metadata": {"name": "default-queue", "namespace": "team-a"}}],
    resource_flavors=[{"metadata": {"name": "default-flavor"}}],
    workloads=[workload("running", admitted=True), workload("later", created="2026-01-02T00:00:00Z"),
               workload("urgent", priority=10, created="2026-01-03T00:00:00Z"),
               workload("first", created="2026-01-01T00:00:00Z")],
    appwrappers=[appwrapper("aw-running", "Running"), appwrapper("aw-resuming", "Resuming")],
)


def refs(plan: Plan, field: str) -> list[str]:
    return [str(item.ref if hasattr(item, "ref") else item) for item in getattr(plan, field)]


@pytest.mark.parametrize("field, expected", [
    pytest.param("webhooks_to_remove", ["ValidatingWebhookConfiguration kueue-validating-webhook-configuration",
                                  "MutatingWebhookConfiguration appwrapper-mutating-webhook-configuration"],
                 id="the old webhooks are those acting on Kueue or AppWrapper objects, not cert-manager's"),
    pytest.param("managers_to_stop", ["Deployment kueue-system/kueue-controller-manager",
                              "Deployment appwrapper-system/appwrapper-controller-manager"],
                 id="the old managers are the Deployments in their webhooks' namespaces"),
    pytest.param("admitted", ["Workload team-a/running"], id="an admitted Workload is taken over as admitted"),
    pytest.param("pending", ["Workload team-a/urgent", "Workload team-a/first", "Workload team-a/later"],
                 id="pending Workloads are listed in queue order: priority first, then the older"),
    pytest.param("take_over", ["ClusterQueue team-a-cq", "LocalQueue team-a/default-queue",
                               "ResourceFlavor default-flavor", "Workload team-a/running", "Workload team-a/later",
                               "Workload team-a/urgent", "Workload team-a/first", "AppWrapper team-a/aw-running"],
                 id="every queue, flavor, Workload and settled AppWrapper is taken over"),
    pytest.param("cannot", ["AppWrapper team-a/aw-resuming", "CustomResourceDefinition cohorts.kueue.x-k8s.io",
                            "CustomResourceDefinition workloads.kueue.x-k8s.io"],
                 id="an AppWrapper mid-step, a Kueue CRD batchgate does not serve and a CRD storing an unserved "
                    "version are listed with how they are handled"),
    pytest.param("blockers", [], id="an MLBatch cluster without admission checks has no blocker"),
])
def test_an_mlbatch_cluster_is_planned(field: str, expected: list[str]) -> None:
    assert refs(plan_migration(MLBATCH, SERVED), field) == expected


def test_a_crd_storing_a_version_batchgate_does_not_serve_is_moved_then_handed_over() -> None:
    plan = plan_migration(MLBATCH, SERVED)
    assert plan.storage == (StorageMove("workloads.kueue.x-k8s.io", "v1beta1", ("v1beta2",), "v1beta2"),)
    assert plan.handover == (Handover("workloads.kueue.x-k8s.io", "v1beta1"),)
    reason = plan.cannot[2].reason
    assert "kube-apiserver refuses to drop a stored version" in reason and "rewrites every object in v1beta1" in reason


def test_objects_are_rewritten_through_the_version_they_are_stored_in() -> None:
    objects = replace(MLBATCH, crds=[crd("workloads.kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Webhook", ("v1beta1",))])
    (move,) = plan_migration(objects, SERVED).storage
    assert (move.via, move.to) == ("v1beta2", "v1beta1")


@pytest.mark.parametrize("objects, blocker", [
    pytest.param(ClusterObjects(), "cluster -: no Kueue or AppWrapper controller found",
                 id="a cluster without Kueue or the AppWrapper controller has nothing to migrate"),
    pytest.param(replace(MLBATCH, cluster_queues=[cluster_queue("gpu", admissionChecks=["prov"])]),
                 "ClusterQueue gpu: uses admission checks, which batchgate does not implement",
                 id="a ClusterQueue with admission checks blocks, naming what to remove"),
    pytest.param(replace(MLBATCH, cluster_queues=[cluster_queue("bad", stopPolicy="Sometimes")]),
                 "ClusterQueue bad: batchgate cannot read it (spec.stopPolicy: must be one of",
                 id="a ClusterQueue batchgate cannot read blocks, naming the field"),
    pytest.param(replace(MLBATCH, workloads=[workload("checking", reserved=True)]),
                 "Workload team-a/checking: holds quota while its admission checks run",
                 id="a Workload holding quota but not yet admitted blocks until it is admitted"),
    pytest.param(replace(MLBATCH, workloads=[{"metadata": {"name": "bad", "namespace": "team-a"}, "spec": {}}]),
                 "Workload team-a/bad: batchgate cannot read it (spec.podSets: must have 1 to 8 pod sets, got 0)",
                 id="a Workload batchgate cannot read blocks, naming the field"),
    pytest.param(replace(MLBATCH, webhooks=[KUEUE, webhook("batchgate-validating", "batchgate-system",
                                                           ["kueue.x-k8s.io"], batchgate=True)]),
                 "ValidatingWebhookConfiguration batchgate-validating: batchgate is installed beside the old",
                 id="batchgate already installed beside Kueue blocks: two admission controllers"),
])
def test_each_blocker_is_named_and_apply_refuses_in_one_line(objects: ClusterObjects, blocker: str) -> None:
    plan = plan_migration(objects, SERVED)
    assert not plan.ready
    with pytest.raises(Blocked) as refused:
        steps(plan)
    line = str(refused.value)
    assert line.startswith("cannot migrate: ") and blocker in line and "\n" not in line


def test_apply_moves_storage_then_removes_webhooks_then_stops_managers_then_hands_crds_over() -> None:
    order = [type(s) for s in steps(plan_migration(MLBATCH, SERVED))]
    assert order == [MoveStorage, RemoveWebhook, RemoveWebhook, StopManager, StopManager, HandOverCrd]


def test_each_step_is_described_in_one_line() -> None:
    lines = [describe(s) for s in steps(plan_migration(MLBATCH, SERVED))]
    assert lines[0] == "store every workloads.kueue.x-k8s.io object in v1beta1 (stored now: v1beta2)"
    assert lines[3] == "stop Deployment kueue-system/kueue-controller-manager (scale to 0, wait for its pods to go)"
    assert all("\n" not in line for line in lines)


def test_a_cluster_queue_in_kueue_v1beta2s_spelling_is_taken_over() -> None:
    spelled = cluster_queue("team-a-cq", flavorFungibility={"whenCanBorrow": "MayStopSearch",
                                                             "whenCanPreempt": "MayStopSearch"})
    assert plan_migration(replace(MLBATCH, cluster_queues=[spelled]), SERVED).ready
    assert ClusterQueue.from_dict(spelled).flavor_fungibility == FlavorFungibility("Borrow", "Preempt")


def test_the_storage_version_hash_is_kube_apiservers() -> None:
    # what `kubectl get --raw /apis/apps/v1` shows for deployments, and /api/v1 for pods
    assert storage_version_hash("apps", "v1", "Deployment") == "8aSe+NMegvE="
    assert storage_version_hash("", "v1", "Pod") == "xPOwRZ+Yhw8="


def test_a_crd_already_stored_in_the_served_version_needs_no_move() -> None:
    objects = replace(MLBATCH, crds=[crd("workloads.kueue.x-k8s.io", ["v1beta1"])])
    assert plan_migration(objects, SERVED).storage == ()
    assert Ref("Workload", "running", "team-a") in plan_migration(objects, SERVED).admitted
