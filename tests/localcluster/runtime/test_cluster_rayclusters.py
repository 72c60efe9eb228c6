"""A RayCluster on the running local cluster, driven with the real kubectl as a user would: the
KubeRay stand-in makes its head, its workers and the head Service, reports `ready`, replaces a
deleted worker, and `spec.suspend` removes the pods and keeps the object."""

from __future__ import annotations

import json
from typing import Any, Callable

from tests.localcluster.runtime.conftest import eventually

RAYCLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  rayVersion: "2.9.0"
  headGroupSpec:
    rayStartParams: {dashboard-host: 0.0.0.0}
    template:
      spec:
        containers: [{name: ray-head, image: rayproject/ray:2.9.0, resources: {requests: {cpu: 200m}}}]
  workerGroupSpecs:
    - groupName: small
      replicas: 2
      minReplicas: 1
      maxReplicas: 3
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-worker, image: rayproject/ray:2.9.0, resources: {requests: {cpu: 200m}}}]
"""


def ray_pods(kubectl: Callable[..., Any], ns: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-n", ns, "-l", "ray.io/cluster=rc", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def cluster_status(kubectl: Callable[..., Any], ns: str) -> dict[str, Any]:
    return json.loads(kubectl("get", "raycluster", "rc", "-n", ns, "-o", "json").stdout).get("status") or {}


def test_a_raycluster_runs_heals_and_suspends(sim_kubectl: Callable[..., Any], ns: str) -> None:
    sim_kubectl("apply", "-n", ns, "-f", "-", input=RAYCLUSTER)
    eventually(lambda: cluster_status(sim_kubectl, ns).get("state") == "ready")
    pods = ray_pods(sim_kubectl, ns)
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]
    status = cluster_status(sim_kubectl, ns)
    assert (status["desiredWorkerReplicas"], status["availableWorkerReplicas"]) == (2, 2)
    assert status["head"]["serviceName"] == "rc-head-svc" and status["head"]["podIP"]
    assert status["endpoints"]["dashboard"] == "8265"
    table = sim_kubectl("get", "raycluster", "rc", "-n", ns).stdout
    assert "ready" in table, table
    worker = next(p["metadata"]["name"] for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    sim_kubectl("delete", "pod", worker, "-n", ns, "--wait=false")
    eventually(lambda: len(ray_pods(sim_kubectl, ns)) == 3 and worker not in {p["metadata"]["name"] for p in ray_pods(sim_kubectl, ns)})
    sim_kubectl("patch", "raycluster", "rc", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
    eventually(lambda: cluster_status(sim_kubectl, ns).get("state") == "suspended" and not ray_pods(sim_kubectl, ns))
    assert sim_kubectl("get", "raycluster", "rc", "-n", ns, "-o", "name").stdout.strip() == "raycluster.ray.io/rc"
    sim_kubectl("patch", "raycluster", "rc", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    eventually(lambda: cluster_status(sim_kubectl, ns).get("state") == "ready" and len(ray_pods(sim_kubectl, ns)) == 3)


RAYJOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rj
  annotations: {localcluster.batchgate.dev/behavior: '{"runFor": "20s", "exitCode": %d}'}
spec:
  entrypoint: python -c "print(1)"
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: 0
  submitterConfig: {backoffLimit: 0}
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray:2.9.0, resources: {requests: {cpu: 200m}}}]
    workerGroupSpecs:
      - groupName: small
        replicas: 1
        template:
          spec:
            containers: [{name: ray-worker, image: rayproject/ray:2.9.0, resources: {requests: {cpu: 200m}}}]
"""


def rayjob_status(kubectl: Callable[..., Any], ns: str) -> dict[str, Any]:
    return json.loads(kubectl("get", "rayjob", "rj", "-n", ns, "-o", "json").stdout).get("status") or {}


def test_a_rayjob_makes_its_cluster_runs_its_submitter_and_cleans_up(sim_kubectl: Callable[..., Any], ns: str) -> None:
    sim_kubectl("apply", "-n", ns, "-f", "-", input=RAYJOB % 0)
    running = eventually(lambda: (s := rayjob_status(sim_kubectl, ns)).get("jobDeploymentStatus") == "Running" and s)
    cluster = running["rayClusterName"]
    assert sim_kubectl("get", "job", "rj", "-n", ns, "-o", "name").stdout.strip() == "job.batch/rj"
    done = eventually(lambda: (s := rayjob_status(sim_kubectl, ns)).get("jobDeploymentStatus") == "Complete" and s,
                      timeout=30)
    assert done["jobStatus"] == "SUCCEEDED"
    eventually(lambda: sim_kubectl("get", "raycluster", cluster, "-n", ns, check=False).returncode != 0)


def test_a_failing_rayjob_fails_with_its_submitter(sim_kubectl: Callable[..., Any], ns: str) -> None:
    sim_kubectl("apply", "-n", ns, "-f", "-", input=RAYJOB % 3)
    failed = eventually(lambda: (s := rayjob_status(sim_kubectl, ns)).get("jobDeploymentStatus") == "Failed" and s,
                        timeout=30)
    assert (failed["jobStatus"], failed["reason"]) == ("FAILED", "AppFailed")
