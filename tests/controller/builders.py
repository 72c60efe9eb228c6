"""Builders for controller tests: the demo's samples as stored, and small jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batchgate import keys
from batchgate.policy import DEFAULT_POLICY
from webhook.rules.frameworks import apply_frameworks
from webhook.rules.mutation import framework_settings
from webhook.rules.review import GroupVersionKind
from tests.builders import sample

ROOT = Path(__file__).resolve().parents[2]


def stored(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as the API server keeps it in team-a after the gateway: a namespace, a uid, a queue."""
    doc["metadata"].setdefault("namespace", "team-a")
    doc["metadata"].setdefault("uid", f"uid-{doc['metadata'].get('name', 'x')}")
    doc["metadata"].setdefault("labels", {}).setdefault(keys.QUEUE_NAME_LABEL, "default-queue")
    return doc


def stored_sample(name: str) -> dict[str, Any]:
    """One of the demo's samples (`alice/appwrapper-job.yaml`) as stored."""
    return stored(sample(name))


def a_pytorch_appwrapper() -> dict[str, Any]:
    """The demo's PyTorchJob in an AppWrapper (a master, two workers) as stored."""
    return stored_sample("alice/appwrapper-pytorchjob.yaml")


def a_pytorchjob() -> dict[str, Any]:
    """The PyTorchJob of that AppWrapper submitted on its own, as stored."""
    return stored(a_pytorch_appwrapper()["spec"]["components"][0]["template"])


def a_job(name: str = "train", *, queue: str | None = "default-queue", parallelism: int | None = 2,
          completions: int | None = None, cpu: str = "1", suspend: bool = True,
          labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "labels": dict(labels or {})}
    if queue:
        meta["labels"]["kueue.x-k8s.io/queue-name"] = queue
    if owner:
        meta["ownerReferences"] = [owner]
    spec: dict[str, Any] = {
        "suspend": suspend,
        "template": {"spec": {"restartPolicy": "Never",
                              "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}},
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def a_framework_job(name: str = "train", framework: str = "pytorch", completions: int = 3, *,
                    namespace: str = "team-a", uid: str | None = "uid-train") -> dict[str, Any]:
    """A Job as stored after the gateway's workload phase (the real pure rules): Indexed, with the
    framework layout on its pod template, suspended so no pod runs."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {keys.FRAMEWORK_LABEL: framework}}
    if uid is not None:
        meta["uid"] = uid
    job: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": {"completions": completions, "suspend": True,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "t:1"}]}}},
    }
    outcome = apply_frameworks(job, GroupVersionKind("batch", "v1", "Job"), "CREATE", framework_settings(DEFAULT_POLICY))
    assert outcome.error is None, outcome.error
    return job
