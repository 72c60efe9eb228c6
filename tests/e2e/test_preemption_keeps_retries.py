"""A preemption never costs a Job its retries (issue 20 item 4), end to end: the shipped policy,
the real gateway and controller, the local cluster's Job controller (v1.32's pod accounting).

Low-priority Jobs with `backoffLimit: 0` fill a ClusterQueue; high-priority Jobs arrive and
preempt them (suspend), and the preempted ones are resumed once room frees. Every Job completes,
and none counts a failed pod: pods deleted because their Job was suspended are not failures.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from tests.e2e.stack import NAMESPACE, Stack, running_controller, running_stack, submit
from tests.e2e.test_gang_shipped_policy import a_job, shipped_policy, wait

pytestmark = pytest.mark.timeout(300)
NODES = "- name: gpu\n  count: 2\n  capacity: {cpu: '32', memory: 128Gi, nvidia.com/gpu: '8'}\n"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("preempt-e2e"), policy_text=shipped_policy(), nodes=NODES) as stack:
        queues = [
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
                "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [{"name": "f", "resources": [
                    {"name": "cpu", "nominalQuota": "64"}, {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "LocalQueue",
             "metadata": {"name": "default-queue", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq"}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 10},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 100},
        ]
        stack.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(queues))
        with running_controller(stack):
            yield stack


def finished(job: dict[str, Any]) -> str:
    return next((c["type"] for c in (job.get("status") or {}).get("conditions") or []
                 if c["type"] in ("Complete", "Failed") and c["status"] == "True"), "")


def test_preempted_jobs_with_backoff_limit_zero_all_complete(stack: Stack) -> None:
    kubectl = stack.kubectl
    names = []
    for i in range(6):
        job = a_job(f"job-{i}", pods=2, gpus=2, run_for=stack.lasting(6))
        job["metadata"]["labels"][keys.PRIORITY_CLASS_LABEL] = "high" if i % 3 == 2 else "low"
        submit(kubectl, job)
        names.append(job["metadata"]["name"])
        time.sleep(1.0)

    def jobs() -> list[dict[str, Any]]:
        return json.loads(kubectl("get", "jobs", "-n", NAMESPACE, "-o", "json").stdout)["items"]

    wait(lambda: all(finished(j) for j in jobs()), 240, "every Job to finish")
    outcome = {j["metadata"]["name"]: (finished(j), j["status"].get("failed", 0)) for j in jobs()}
    assert outcome == {name: ("Complete", 0) for name in names}
    workloads = json.loads(kubectl("get", "workloads.kueue.x-k8s.io", "-n", NAMESPACE, "-o", "json").stdout)["items"]
    preempted = [w for w in workloads for c in w["status"].get("conditions") or []
                 if c["type"] == keys.COND_PREEMPTED]
    assert preempted, "no Job was preempted: the test did not test what it is for"
