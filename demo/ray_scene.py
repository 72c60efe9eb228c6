"""Scene 4: Ray, as MLBatch users submit it: a RayCluster in an AppWrapper, a queued RayJob, and
a RayCluster without a queue label, refused.

bob's RayCluster in an AppWrapper (the CodeFlare SDK's shape) is queued, admitted, gang-placed by
the controller and comes up `ready` through the local cluster's KubeRay stand-in; alice's RayJob,
with a queue label, is admitted, makes its cluster, runs its submitter to completion and takes its
cluster down; a RayCluster with no queue label would run outside quota, so the gateway denies it.
"""

from __future__ import annotations

import time

import yaml

from batchgate import keys
from batchgate.clock import Clock
from demo.kubectl import Kubectl
from demo.narration import Narrator
from demo.workloads import ray_cluster, ray_cluster_appwrapper, ray_job

CLUSTER, JOB = "raytest", "ray-sample"
POLL_SECONDS = 0.3
WAIT_SECONDS = 30.0


def wait_for(kubectl: Kubectl, clock: Clock, user: str, jsonpath: str, wanted: str, *args: str) -> str:
    """Poll `kubectl get ARGS -o jsonpath` until it prints `wanted` (or the timeout); the last value."""
    deadline = clock.monotonic() + WAIT_SECONDS
    while True:
        value = kubectl.run("get", *args, "-o", f"jsonpath={jsonpath}", user=user, check=False).stdout
        if value == wanted or clock.monotonic() > deadline:
            return value
        time.sleep(POLL_SECONDS)


def cluster_in_appwrapper(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> None:
    narrator.say(f"bob submits {CLUSTER}: a RayCluster (head + 2 workers) in an AppWrapper, as the CodeFlare SDK does")
    kubectl.run("apply", "-f", "-", user="bob", stdin=yaml.safe_dump(ray_cluster_appwrapper(CLUSTER, "team-b", 2)))
    phase = wait_for(kubectl, clock, "bob", "{.status.phase}", "Running", "appwrapper", CLUSTER, "-n", "team-b")
    state = wait_for(kubectl, clock, "bob", "{.status.state}", "ready", "raycluster", CLUSTER, "-n", "team-b")
    narrator.say(f"the controller queues it, admits it and creates the RayCluster (AppWrapper {phase or 'not Running'}, "
                 f"RayCluster {state or 'not ready'}); its pods, bound by the controller:")
    narrator.quote(kubectl.run("get", "pods", "-n", "team-b", "-l", f"ray.io/cluster={CLUSTER}", "-o", "wide",
                               user="bob").stdout)


def queued_rayjob(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> None:
    narrator.say(f"alice submits {JOB}: a RayJob with a queue label, its cluster made for it and taken down after")
    kubectl.run("apply", "-f", "-", user="alice", stdin=yaml.safe_dump(ray_job(JOB, "team-a", "5s")))
    seen: list[str] = []
    deadline = clock.monotonic() + WAIT_SECONDS
    while clock.monotonic() < deadline:
        status = kubectl.run("get", "rayjob", JOB, "-n", "team-a", "-o", "jsonpath={.status.jobDeploymentStatus}",
                             user="alice", check=False).stdout
        if status and (not seen or seen[-1] != status):
            seen.append(status)
        if status in ("Complete", "Failed"):
            break
        time.sleep(POLL_SECONDS)
    narrator.say(f"its deployment went {' -> '.join(seen) or 'nowhere yet'}:")
    narrator.quote(kubectl.run("get", "rayjob", JOB, "-n", "team-a", user="alice").stdout)


def unqueued_cluster(kubectl: Kubectl, narrator: Narrator) -> None:
    narrator.say(f"alice tries a RayCluster without a {keys.QUEUE_NAME_LABEL} label:")
    denied = kubectl.run("apply", "-f", "-", user="alice", check=False,
                         stdin=yaml.safe_dump(ray_cluster("unqueued", "team-a")))
    narrator.quote(denied.stderr.strip() or denied.stdout.strip())


def run(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> None:
    cluster_in_appwrapper(kubectl, narrator, clock)
    queued_rayjob(kubectl, narrator, clock)
    unqueued_cluster(kubectl, narrator)
