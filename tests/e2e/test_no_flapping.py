"""No suspend/resume flapping (issue 20 item 4), end to end: the real gateway and controller on the
local cluster, two ClusterQueues of a cohort, one borrowing, a stream of Jobs.

The shape is Kueue#6947's: Jobs of `cq-b` borrow `cq-a`'s quota; a Job that can never fit waits in
`cq-a`, older than the `cq-a` Jobs that reclaim the borrowed quota. Each reclaim releases a
victim's quota, which moves the never-fitting Job back to the head of `cq-a`; before the fix the
victim was admitted again at once and preempted again, its Job suspended and resumed within a
second, over and over, while the reclaiming Job waited (about 19 s instead of 1). A watch records
every `spec.suspend` change of every Job: once stopped, no Job changes twice within a second,
none is preempted twice, and every Job but the never-fitting one completes. (Without the fix
this failed in at least 3 of 5 runs; the others showed only the reclaiming Job's long wait.)
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from controller.adapters.kube import RESOURCES, KubeClient
from tests.e2e.stack import NAMESPACE, Stack, running_controller, running_stack, submit
from tests.e2e.test_gang_shipped_policy import wait

pytestmark = pytest.mark.timeout(240)
NEVER_FITS = "job-a-huge"


def a_job(name: str, queue: str, cpu: int, run_for: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {keys.QUEUE_NAME_LABEL: queue}},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
                "metadata": {"annotations": {"localcluster.batchgate.dev/behavior": json.dumps({"runFor": run_for})}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": {
                    "requests": {"cpu": str(cpu)}}}]}}}}


class SuspendWatch:
    """Every Job's `spec.suspend` as the watch delivers it, with the time it arrived."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.flips: dict[str, list[tuple[float, bool]]] = {}  # name -> [(monotonic time, suspend)]
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "SuspendWatch":
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(10)

    def _run(self) -> None:
        version = self.client.list(RESOURCES["Job"], NAMESPACE)["metadata"]["resourceVersion"]
        while not self._stop.is_set():
            self._stream = self.client.watch(RESOURCES["Job"], NAMESPACE, version, 30)
            for event in self._stream:
                obj = event["object"]
                version = obj["metadata"].get("resourceVersion", version)
                if event["type"] not in ("ADDED", "MODIFIED"):
                    continue
                seen = self.flips.setdefault(obj["metadata"]["name"], [])
                suspend = bool(obj["spec"].get("suspend"))
                if not seen or seen[-1][1] != suspend:
                    seen.append((time.monotonic(), suspend))

    def quick_flips(self) -> dict[str, list[float]]:
        """Per Job, the gaps under a second between two `suspend` changes once it has first been
        stopped: a resume soon after a suspension, or a suspension soon after a resume."""
        out = {}
        for name, seen in self.flips.items():
            gaps = [round(t1 - t0, 3) for (t0, _), (t1, _) in zip(seen[2:], seen[3:]) if t1 - t0 < 1.0]
            if gaps:
                out[name] = gaps
        return out


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("flapping-e2e")) as stack:
        def cq(name: str, cpu: int, preemption: dict[str, str]) -> dict[str, Any]:
            return {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
                "namespaceSelector": {}, "cohort": "c", "preemption": preemption,
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "f", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}}

        queues = [{"apiVersion": keys.KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
                  cq("cq-a", 4, {"reclaimWithinCohort": "Any"}), cq("cq-b", 0, {}),
                  *({"apiVersion": keys.KUEUE_API_VERSION, "kind": "LocalQueue",
                     "metadata": {"name": f"q-{x}", "namespace": NAMESPACE}, "spec": {"clusterQueue": f"cq-{x}"}}
                    for x in "ab")]
        stack.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(queues))
        with running_controller(stack):
            yield stack


def test_no_job_is_resumed_within_a_second_of_its_suspension(stack: Stack) -> None:
    kubectl = stack.kubectl
    client = KubeClient.from_kubeconfig(str(stack.cluster.kubeconfig))
    try:
        with SuspendWatch(client) as watch:
            for i in range(3):
                submit(kubectl, a_job(f"job-b-{i}", "q-b", 1, run_for=stack.lasting(10)))
            wait(lambda: len([j for j in jobs(kubectl) if not j["spec"].get("suspend")]) == 3, 60, "cq-b to borrow")
            submit(kubectl, a_job(NEVER_FITS, "q-a", 5, run_for=stack.lasting(3)))
            time.sleep(0.5)
            for i in range(3):
                submit(kubectl, a_job(f"job-a-{i}", "q-a", 2, run_for=stack.lasting(3)))
                time.sleep(0.3)
            wait(lambda: all(done(j) for j in jobs(kubectl) if j["metadata"]["name"] != NEVER_FITS), 180,
                 "every Job that fits to complete")
        preempted = [name for name, seen in watch.flips.items() if len(seen) > 2]
        assert preempted, f"no Job was preempted: the test did not test what it is for ({watch.flips})"
        assert watch.quick_flips() == {}, watch.flips
        # created suspended, started, and at most once preempted and resumed: never taken twice
        assert {name: len(seen) for name, seen in watch.flips.items() if len(seen) > 4} == {}, watch.flips
    finally:
        client.close()


def jobs(kubectl: Any) -> list[dict[str, Any]]:
    return json.loads(kubectl("get", "jobs", "-n", NAMESPACE, "-o", "json").stdout)["items"]


def done(job: dict[str, Any]) -> bool:
    return any(c["type"] == "Complete" and c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or [])
