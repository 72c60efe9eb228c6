"""Moving a job to another queue, and a preempted gang's PodGroup (issue 16 items 4 and 8), end to
end: the shipped policy, the real gateway, the real controller and kubectl on the local cluster.

- alice submits each queued kind with a typo in its queue label; its Workload waits ("LocalQueue
  default-queu doesn't exist") until she fixes the label with `kubectl label --overwrite`; the same
  Workload then moves to the right LocalQueue and is admitted, and the job runs. Once it runs, the
  gateway refuses to relabel it.
- A running gang preempted by a higher-priority one: once its pods are gone, its PodGroup is back
  to Pending with nothing counted as running or failed.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from tests.builders import a_pytorchjob, a_raycluster, a_rayjob, an_appwrapper
from tests.e2e.stack import NAMESPACE, USER, Stack, submit
from tests.e2e.test_controller_faults import RESOURCE, STATE, condition, quiet, wait
from tests.e2e.test_gang_shipped_policy import (  # noqa: F401  (module fixtures: the shipped stack, the controller)
    a_job, controller, get_json, pods_of, shipped,
)

pytestmark = pytest.mark.timeout(300)
TYPO, RIGHT = "default-queu", "default-queue"


def workload_of(kubectl: Any, kind: str, name: str) -> dict[str, Any]:
    items = get_json(kubectl, "workloads.kueue.x-k8s.io")["items"]
    mine = [w for w in items if w["metadata"]["ownerReferences"][0]["kind"] == kind
            and w["metadata"]["ownerReferences"][0]["name"] == name]
    return mine[0] if mine else {}


def mistyped(kind: str) -> dict[str, Any]:
    """One small object of `kind` as alice writes it, its queue label mistyped."""
    if kind == "Job":
        job = a_job("typo-job", pods=2, gpus=0, run_for="6000s")
        job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = TYPO
        return job
    builders = {
        "PyTorchJob": lambda: a_pytorchjob("typo-pt", namespace=NAMESPACE).with_queue(TYPO),
        # HTTPMode: no submitter pod, whose memory request the shipped fixture's queue does not cover.
        "RayJob": lambda: a_rayjob("typo-rj", namespace=NAMESPACE).with_queue(TYPO).with_spec(submissionMode="HTTPMode"),
        "RayCluster": lambda: a_raycluster("typo-rc", namespace=NAMESPACE).with_queue(TYPO),
        "AppWrapper": lambda: an_appwrapper("typo-aw", namespace=NAMESPACE).labelled(keys.QUEUE_NAME_LABEL, TYPO)
        .with_job(),
    }
    return builders[kind]().build()


SUSPEND_AT = {"PyTorchJob": ("spec", "runPolicy", "suspend")}


def suspended(obj: dict[str, Any]) -> bool:
    value: Any = obj
    for step in SUSPEND_AT.get(obj["kind"], ("spec", "suspend")):
        value = (value or {}).get(step)
    return value is True


@pytest.mark.parametrize("kind", list(RESOURCE))
def test_a_mistyped_queue_is_fixed_by_relabelling_and_the_job_is_admitted(shipped: Stack, controller: Any,
                                                                         kind: str) -> None:
    kubectl = shipped.kubectl
    obj = mistyped(kind)
    name = obj["metadata"]["name"]
    STATE["dump"] = lambda: yaml.safe_dump({"workload": workload_of(kubectl, kind, name),
                                            "object": get_json(kubectl, RESOURCE[kind], name)})
    submit(kubectl, obj)

    def waiting() -> dict[str, Any] | None:
        workload = workload_of(kubectl, kind, name)
        reserved = condition(workload, keys.COND_QUOTA_RESERVED)
        return workload if f"LocalQueue {TYPO} doesn't exist" in reserved.get("message", "") else None

    before = wait(waiting, 60, "the Workload waiting for a LocalQueue that does not exist")
    assert before["spec"]["queueName"] == TYPO

    kubectl("label", "--overwrite", RESOURCE[kind], name, "-n", NAMESPACE, f"{keys.QUEUE_NAME_LABEL}={RIGHT}",
            user=USER)

    def admitted() -> dict[str, Any] | None:
        workload = workload_of(kubectl, kind, name)
        return workload if condition(workload, keys.COND_ADMITTED).get("status") == "True" else None

    after = wait(admitted, 60, "the Workload admitted through the right LocalQueue")
    assert after["metadata"]["uid"] == before["metadata"]["uid"], "the same Workload moved, none was made anew"
    assert after["spec"]["queueName"] == RIGHT and after["status"]["admission"]["clusterQueue"] == "cq"
    wait(lambda: not suspended(get_json(kubectl, RESOURCE[kind], name)), 30, "the job started")
    described = kubectl("describe", RESOURCE[kind], name, "-n", NAMESPACE).stdout
    assert f'Workload moved from LocalQueue "{TYPO}" to "{RIGHT}"' in described

    # Running now: moving it again is refused by the gateway (issue 20 item 2), and nothing moves.
    done = kubectl("label", "--overwrite", RESOURCE[kind], name, "-n", NAMESPACE,
                   f"{keys.QUEUE_NAME_LABEL}={TYPO}", user=USER, check=False)
    assert done.returncode != 0 and "QueueNameImmutable" in done.stderr, done.stderr
    assert workload_of(kubectl, kind, name)["spec"]["queueName"] == RIGHT
    kubectl("delete", RESOURCE[kind], name, "-n", NAMESPACE, "--wait=true", "--timeout=60s")


@pytest.fixture(scope="module")
def preempting_queue(shipped: Stack) -> Iterator[str]:
    """A ClusterQueue of 8 GPUs that preempts lower priorities, its LocalQueue, and two priorities."""
    objects = [
        {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": "cq-preempt"}, "spec": {
            "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
                {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "16"},
                                                         {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]}},
        {"apiVersion": keys.KUEUE_API_VERSION, "kind": "LocalQueue",
         "metadata": {"name": "preempt-queue", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq-preempt"}},
        {"apiVersion": keys.KUEUE_API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"},
         "value": 1},
        {"apiVersion": keys.KUEUE_API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"},
         "value": 100},
    ]
    shipped.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    yield "preempt-queue"


def gang_job(name: str, priority: str, queue: str) -> dict[str, Any]:
    job = a_job(name, pods=2, gpus=4, run_for="6000s")
    job["metadata"]["labels"].update({keys.QUEUE_NAME_LABEL: queue, keys.PRIORITY_CLASS_LABEL: priority})
    return job


def podgroup_status(kubectl: Any, name: str) -> dict[str, Any]:
    done = kubectl("get", "podgroups.scheduling.x-k8s.io", name, "-n", NAMESPACE, "-o", "json", check=False)
    return (json.loads(done.stdout).get("status") or {}) if done.returncode == 0 else {}


def test_a_preempted_gangs_podgroup_counts_no_pod_once_they_are_gone(shipped: Stack, controller: Any,
                                                                     preempting_queue: str) -> None:
    kubectl = shipped.kubectl
    quiet(kubectl)
    STATE["dump"] = lambda: yaml.safe_dump({"podgroup": podgroup_status(kubectl, "low"),
                                            "pods": [(p["metadata"]["name"], p["status"].get("phase"))
                                                     for p in pods_of(kubectl, "low")]})
    submit(kubectl, gang_job("low", "low", preempting_queue))
    wait(lambda: podgroup_status(kubectl, "low").get("phase") == "Running", 90, "the low gang Running")
    assert podgroup_status(kubectl, "low").get("running") == 2

    submit(kubectl, gang_job("high", "high", preempting_queue))
    wait(lambda: condition(workload_of(kubectl, "Job", "low"), keys.COND_EVICTED).get("reason") == "Preempted", 60,
         "the low gang preempted")
    wait(lambda: not pods_of(kubectl, "low"), 90, "the low gang's pods gone")
    wait(lambda: podgroup_status(kubectl, "high").get("phase") == "Running", 90, "the high gang Running")

    status = wait(lambda: (lambda s: s if s.get("phase") == "Pending" and not s.get("running") else None)(
        podgroup_status(kubectl, "low")), 30, "the low PodGroup back to Pending with no pod running")
    assert not status.get("failed") and not status.get("succeeded"), status
    columns = kubectl("get", "podgroups.scheduling.x-k8s.io", "low", "-n", NAMESPACE, "--no-headers").stdout.split()
    assert columns[1] == "Pending", columns
    for name in ("high", "low"):
        kubectl("delete", "job", name, "-n", NAMESPACE, "--wait=true", "--timeout=60s")
