"""The StatefulSet controller's decisions, as kube-controller-manager v1.32 makes them
(pkg/controller/statefulset/stateful_set_control.go, updateStatefulSet; stateful_set_utils.go).

We test these aspects: stable names, hostname, subdomain and labels; OrderedReady creates one pod
at a time and only after every lower one is Running and Ready; Parallel creates them all; scale
down removes the highest ordinal first, one at a time unless Parallel; a finished pod is deleted
to be made again; status counts only live pods.
"""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.sim.statefulsets import POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL, reconcile_statefulset


def a_set(replicas: int = 3, policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                            "template": {"metadata": {"labels": {"app": "db"}},
                                         "spec": {"containers": [{"name": "c", "image": "db"}]}}}
    if policy:
        spec["podManagementPolicy"] = policy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": "ns", "uid": "u1",
                                                                      "generation": 2}, "spec": spec}


def a_pod(ordinal: int, state: str = "ready", owner: str = "u1") -> dict[str, Any]:
    phase, ready = {"ready": ("Running", "True"), "running": ("Running", "False"), "pending": ("Pending", "False"),
                    "failed": ("Failed", "False"), "succeeded": ("Succeeded", "False"),
                    "terminating": ("Running", "True")}[state]
    meta: dict[str, Any] = {"name": f"web-{ordinal}", "namespace": "ns",
                            "ownerReferences": [{"kind": "StatefulSet", "name": "web", "uid": owner, "controller": True}]}
    if state == "terminating":
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}}


def created(step: Any) -> list[str]:
    return [p["metadata"]["name"] for p in step.creates]


CASES = [
    pytest.param(a_set(), [], ["web-0"], [], id="OrderedReady starts with ordinal 0 alone"),
    pytest.param(a_set(), [a_pod(0, "running")], [], [], id="the next pod waits until the previous one is Ready"),
    pytest.param(a_set(), [a_pod(0)], ["web-1"], [], id="a Ready predecessor lets the next one be made"),
    pytest.param(a_set(policy="Parallel"), [], ["web-0", "web-1", "web-2"], [], id="Parallel makes every pod at once"),
    pytest.param(a_set(), [a_pod(0), a_pod(1), a_pod(2, "failed")], [], ["web-2"],
                 id="a failed pod is deleted so that it is made again"),
    pytest.param(a_set(), [a_pod(0, "succeeded"), a_pod(1)], [], ["web-0"],
                 id="a succeeded pod is deleted too, as v1.32 does"),
    pytest.param(a_set(1), [a_pod(0), a_pod(1), a_pod(2)], [], ["web-2"],
                 id="scale down removes the highest ordinal first, one at a time"),
    pytest.param(a_set(1), [a_pod(0), a_pod(1), a_pod(2, "terminating")], [], [],
                 id="scale down waits for the last deletion to finish"),
    pytest.param(a_set(1), [a_pod(0, "running"), a_pod(1)], [], [],
                 id="OrderedReady does not scale down while a wanted pod is not Ready"),
    pytest.param(a_set(1, "Parallel"), [a_pod(0, "running"), a_pod(1), a_pod(2)], [], ["web-2", "web-1"],
                 id="Parallel deletes every condemned pod at once"),
    pytest.param(a_set(0), [a_pod(0)], [], ["web-0"], id="zero replicas removes every pod"),
    pytest.param(a_set(), [a_pod(0, owner="other")], ["web-0"], [],
                 id="a pod of the same name that the set does not control is not counted"),
]


@pytest.mark.parametrize("sts, pods, creates, deletes", CASES)
def test_each_step(sts: dict[str, Any], pods: list[dict[str, Any]], creates: list[str], deletes: list[str]) -> None:
    step = reconcile_statefulset(sts, pods)
    assert (created(step), step.deletes) == (creates, deletes)


def test_a_pod_has_its_stable_identity() -> None:
    pod = reconcile_statefulset(a_set(), [a_pod(0)]).creates[0]
    assert pod["metadata"]["name"] == "web-1"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-1", "db")
    labels = pod["metadata"]["labels"]
    assert (labels["app"], labels[POD_NAME_LABEL], labels[POD_INDEX_LABEL]) == ("db", "web-1", "1")
    assert labels[REVISION_LABEL].startswith("web-")
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "u1"


def test_status_counts_live_pods() -> None:
    step = reconcile_statefulset(a_set(), [a_pod(0), a_pod(1, "running"), a_pod(2, "terminating")])
    status = step.status
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"], status["observedGeneration"]) == (
        2, 1, 1, 2)
    assert status["currentRevision"] == status["updateRevision"]
