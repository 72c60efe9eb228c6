"""Scene 2: MLBatch-like queues, more GPU work than fits, and quota admission happening live.

alice fills the cluster through her team's queue (borrowing the idle quota of the cohort), bob
then claims his team's own quota back (a reclaim preempts one of alice's borrowing jobs), and
alice's high-priority job preempts one of her own default-priority jobs. Every line printed
comes from the Workloads' and ClusterQueues' status, polled with kubectl.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from batchgate.clock import Clock
from demo.kubectl import Kubectl
from demo.narration import Narrator
from demo.progress import JobState, job_states, queue_table, transitions
from demo.stack import DEMO_MANIFESTS
from demo.workloads import gpu_job

POLL_SECONDS = 0.4
QUIET_SECONDS = 2.0
SETTLE_TIMEOUT_SECONDS = 30.0
PREEMPTION_PENDING = "Pending the preemption of"  # Kueue's suffix while its victims are being evicted
PODS_COLUMNS = ("custom-columns=NAMESPACE:.metadata.namespace,POD:.metadata.name,NODE:.spec.nodeName,"
                "GPUS:.spec.containers[0].resources.limits.nvidia\\.com/gpu,STATUS:.status.phase")


@dataclass
class Watch:
    """The last snapshot of queued jobs, so each poll prints only what changed."""

    kubectl: Kubectl
    narrator: Narrator
    clock: Clock
    states: Mapping[str, JobState]
    submitted: set[str] = field(default_factory=set)  # namespace/name of every job applied so far
    queues: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # the last ClusterQueues seen, by name

    def poll(self) -> tuple[list[str], list[dict[str, Any]]]:
        workloads = self.kubectl.get_json("workloads", "-A")["items"]
        queues = self.kubectl.get_json("clusterqueues")["items"]
        now, by_name = job_states(workloads), {q["metadata"]["name"]: q for q in queues}
        lines = transitions(self.states, now, by_name, self.queues)
        self.states, self.queues = now, by_name
        return lines, queues

    def settled(self) -> bool:
        """Every submitted job's Workload is admitted (or done), or pending with the reason it waits.

        A quiet spell alone is not enough on a loaded machine: a Workload the controller has not
        looked at yet, or one whose preemption is still under way, would end the wait and the
        admission or preemption that follows would go unreported.
        """
        return all(
            (state := self.states.get(job)) is not None
            and (state.state in ("admitted", "finished") or (state.state == "pending" and _waits(state.message)))
            for job in self.submitted
        )

    def settle(self) -> list[dict[str, Any]]:
        """Print transitions until every job has settled and nothing has changed for a while."""
        deadline = self.clock.monotonic() + SETTLE_TIMEOUT_SECONDS
        last_change = self.clock.monotonic()
        queues: list[dict[str, Any]] = []
        seen_any = False
        while self.clock.monotonic() < deadline:
            lines, queues = self.poll()
            for line in lines:
                self.narrator.say(f"  {line}")
            if lines:
                seen_any, last_change = True, self.clock.monotonic()
            if seen_any and self.settled() and self.clock.monotonic() - last_change >= QUIET_SECONDS:
                return queues
            time.sleep(POLL_SECONDS)
        self.narrator.say(f"  (still changing after {SETTLE_TIMEOUT_SECONDS:.0f}s; moving on)")
        return queues


def _waits(message: str) -> bool:
    """A pending Workload that says why it waits, and is not about to be admitted by a preemption."""
    return bool(message) and PREEMPTION_PENDING not in message


def _submit(watch: Watch, user: str, jobs: list[dict[str, Any]], why: str) -> None:
    names = ", ".join(j["metadata"]["name"] for j in jobs)
    watch.narrator.say(f"{user} submits {names}: {why}")
    watch.kubectl.run("apply", "-f", "-", user=user, stdin=yaml.safe_dump_all(jobs))
    watch.submitted.update(f"{j['metadata']['namespace']}/{j['metadata']['name']}" for j in jobs)


def wait_for_running_pods(kubectl: Kubectl, clock: Clock, timeout: float = SETTLE_TIMEOUT_SECONDS) -> None:
    """Until no pod of an admitted job is still Pending (or the timeout passes)."""
    deadline = clock.monotonic() + timeout
    while clock.monotonic() < deadline:
        pods = kubectl.get_json("pods", "-A")["items"]
        if pods and all((p.get("status") or {}).get("phase") != "Pending" for p in pods):
            return
        time.sleep(POLL_SECONDS)


def run(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> Watch:
    narrator.say("admin applies the queues (demo/manifests/queues.yaml): ResourceFlavor default-flavor, "
                 "WorkloadPriorityClasses low/default/high-priority, ClusterQueues team-a-cq and team-b-cq "
                 "(8 GPUs each) and slack-cluster-queue (16 GPUs) in cohort default-cohort, "
                 "a LocalQueue default-queue per team")
    kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "queues.yaml"))
    narrator.quote(kubectl.run("get", "clusterqueues").stdout)
    watch = Watch(kubectl, narrator, clock, {})
    alice_jobs = [gpu_job(f"alice-{i}", "team-a", pods=2, gpus_per_pod=4) for i in range(1, 6)]
    _submit(watch, "alice", alice_jobs,
            "5 jobs x 8 GPUs = 40 GPUs into a queue of 8, on a cluster of 32")
    watch.settle()
    _submit(watch, "bob", [gpu_job("bob-1", "team-b", pods=2, gpus_per_pod=4)],
            "8 GPUs, within team-b's own quota, which alice is borrowing")
    watch.settle()
    _submit(watch, "alice", [gpu_job("alice-urgent", "team-a", pods=2, gpus_per_pod=4,
                                                 priority="high-priority")],
            "8 GPUs at high-priority")
    queues = watch.settle()
    narrator.say("the queues now (kubectl get clusterqueues -o json, summarized):")
    narrator.quote("\n".join(queue_table(queues)))
    wait_for_running_pods(kubectl, clock)
    narrator.say("pods of the admitted jobs, bound by batchgate-scheduler a whole job at a time and packed onto "
                 f"the fewest GPU nodes (kubectl get pods -A -o {PODS_COLUMNS.split('=')[0]}=...):")
    narrator.quote(kubectl.run("get", "pods", "-A", "-o", PODS_COLUMNS).stdout)
    return watch
