"""Every job finishes after any fault (issue 20 item 5): a queued stream, the controller killed
with SIGKILL at random points and started again, on the local cluster with the real gateway.

The controller runs as its own process (`batchgate controller`), so a kill lands wherever it is:
in an admission cycle, a status write, an un-suspend, a preemption. A sampler reads every
Workload while it runs and checks that the admitted usage never exceeds the ClusterQueue's quota.
At the end every Job has finished, those that fail fail by their own exit code
(BackoffLimitExceeded after a pod exiting 1), none counts a failure it did not cause, and the
queue holds nothing. The seed is printed; `KILL_TEST_SEED` replays a run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchgate import keys
from batchgate.api.kueue import Workload
from tests.e2e.stack import NAMESPACE, ROOT, Stack, running_stack, submit
from tests.e2e.test_gang_shipped_policy import wait

pytestmark = pytest.mark.timeout(180)
QUOTA_CPU = Decimal(4)
JOBS = 14
KILLS = 6
FAILING = {3, 10}  # these Jobs' pods exit 1: they fail, by their own exit code


def a_job(index: int, run_for: str) -> dict[str, Any]:
    behavior = {"runFor": run_for, "exitCode": 1 if index in FAILING else 0}
    labels = {keys.QUEUE_NAME_LABEL: "q", keys.PRIORITY_CLASS_LABEL: "high" if index % 4 == 3 else "low"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{index}", "namespace": NAMESPACE, "labels": labels},
            "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": {
                "metadata": {"annotations": {"localcluster.batchgate.dev/behavior": json.dumps(behavior)}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": {
                    "requests": {"cpu": "1"}}}]}}}}


def start_controller(kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", str(kubeconfig),
                                 "--no-leader-elect", "--metrics-port", "0", "--namespace", NAMESPACE],
                                stdout=out, stderr=subprocess.STDOUT, env=env)


class Sampler:
    """Reads every Workload over and over; remembers the largest admitted usage it ever saw."""

    def __init__(self, stack: Stack) -> None:
        self.stack, self.samples, self.worst = stack, 0, Decimal(0)
        self.violations: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            done = self.stack.kubectl("get", "workloads.kueue.x-k8s.io", "-n", NAMESPACE, "-o", "json", check=False)
            if done.returncode == 0:
                usage = Decimal(0)
                for raw in json.loads(done.stdout)["items"]:
                    workload = Workload.from_dict(raw)
                    if workload.holds_quota and not workload.is_true(keys.COND_FINISHED):
                        assert workload.admission is not None
                        usage += sum((a.usage().get("cpu", Decimal(0)) for a in workload.admission.pod_set_assignments),
                                     Decimal(0))
                self.samples += 1
                self.worst = max(self.worst, usage)
                if usage > QUOTA_CPU:
                    self.violations.append(f"{usage} cpu admitted of {QUOTA_CPU}")
            self._stop.wait(0.2)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_stack(tmp_path_factory.mktemp("kill-e2e")) as stack:
        queues = [
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
                "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "f", "resources": [{"name": "cpu", "nominalQuota": str(QUOTA_CPU)}]}]}]}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "LocalQueue",
             "metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq"}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 10},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 100},
        ]
        stack.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(queues))
        yield stack


def test_a_queued_stream_survives_a_controller_killed_at_random_points(stack: Stack, tmp_path: Path) -> None:
    seed = int(os.environ.get("KILL_TEST_SEED") or random.randrange(1 << 30))
    print(f"KILL_TEST_SEED={seed}")
    rng = random.Random(seed)
    log = tmp_path / "controller.log"
    kubeconfig = stack.controller_kubeconfig
    controller = start_controller(kubeconfig, log)
    try:
        with Sampler(stack) as sampler:
            submitted, kills = 0, 0
            while submitted < JOBS or kills < KILLS:
                deadline = time.monotonic() + rng.uniform(0.5, 3.0)
                while time.monotonic() < deadline and submitted < JOBS:
                    submit(stack.kubectl, a_job(submitted, stack.lasting(2)))
                    submitted += 1
                    time.sleep(rng.uniform(0.0, 0.4))
                time.sleep(max(0.0, deadline - time.monotonic()))
                if kills < KILLS:
                    controller.send_signal(signal.SIGKILL)
                    controller.wait(10)
                    kills += 1
                    controller = start_controller(kubeconfig, log)

            def jobs() -> list[dict[str, Any]]:
                return json.loads(stack.kubectl("get", "jobs", "-n", NAMESPACE, "-o", "json").stdout)["items"]

            def outcome(job: dict[str, Any]) -> tuple[str, str]:
                for cond in job["status"].get("conditions") or []:
                    if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
                        return cond["type"], cond.get("reason") or ""
                return "", ""

            wait(lambda: len(jobs()) == JOBS and all(outcome(j)[0] for j in jobs()), 120, "every Job to finish")
            expected = {f"job-{i}": ("Failed", "BackoffLimitExceeded") if i in FAILING
                        else ("Complete", "CompletionsReached") for i in range(JOBS)}
            assert {j["metadata"]["name"]: outcome(j) for j in jobs()} == expected
            # A failing Job's two pods may both exit 1 before it fails; a good one counts no failure.
            counted = {j["metadata"]["name"]: j["status"].get("failed", 0) in ((1, 2) if int(j["metadata"]["name"][4:])
                                                                               in FAILING else (0,)) for j in jobs()}
            assert all(counted.values()), f"Jobs that counted failed pods they did not cause: {counted}"

            def released() -> bool:
                cq = json.loads(stack.kubectl("get", "clusterqueues.kueue.x-k8s.io", "cq", "-o", "json").stdout)
                status = cq.get("status") or {}
                totals = [r["total"] for f in status.get("flavorsReservation") or [] for r in f["resources"]]
                return status.get("reservingWorkloads") == 0 and all(t in ("0", 0) for t in totals)

            wait(released, 30, "all quota released")
        print(f"{kills} kills, {sampler.samples} samples, most admitted {sampler.worst} of {QUOTA_CPU} cpu")
        assert sampler.samples > 0 and not sampler.violations, sampler.violations[:5]
    finally:
        controller.send_signal(signal.SIGKILL)
        controller.wait(10)
