"""A StatefulSet on the running local cluster, driven with the real kubectl as a user would:
its pods come up one at a time with stable names, `kubectl scale` removes the highest ordinal,
a deleted pod comes back under its name, and `kubectl get sts` reports readiness."""

from __future__ import annotations

import json
from typing import Any, Callable

from tests.localcluster.runtime.conftest import eventually

STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: db:1, resources: {requests: {cpu: 100m}}}]
"""


def pods(kubectl: Callable[..., Any], ns: str) -> dict[str, str]:
    out = kubectl("get", "pods", "-n", ns, "-l", "app=db", "-o", "json").stdout
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in json.loads(out)["items"]
            if not p["metadata"].get("deletionTimestamp")}


def test_a_statefulset_keeps_its_stably_named_pods(sim_kubectl: Callable[..., Any], ns: str) -> None:
    sim_kubectl("apply", "-n", ns, "-f", "-", input=STATEFULSET)
    eventually(lambda: pods(sim_kubectl, ns) == {"db-0": "Running", "db-1": "Running", "db-2": "Running"})
    eventually(lambda: sim_kubectl("get", "sts", "db", "-n", ns, "-o",
                                   "jsonpath={.status.readyReplicas}/{.status.replicas}").stdout == "3/3")
    hostname = sim_kubectl("get", "pod", "db-1", "-n", ns, "-o", "jsonpath={.spec.hostname}.{.spec.subdomain}").stdout
    assert hostname == "db-1.db"
    sim_kubectl("scale", "sts", "db", "-n", ns, "--replicas=1")
    eventually(lambda: set(pods(sim_kubectl, ns)) == {"db-0"})
    uid = sim_kubectl("get", "pod", "db-0", "-n", ns, "-o", "jsonpath={.metadata.uid}").stdout
    sim_kubectl("delete", "pod", "db-0", "-n", ns, "--wait=false")

    def made_again() -> bool:
        now = sim_kubectl("get", "pod", "db-0", "-n", ns, "-o", "jsonpath={.metadata.uid}", check=False).stdout
        return bool(now) and now != uid and pods(sim_kubectl, ns) == {"db-0": "Running"}

    eventually(made_again)
