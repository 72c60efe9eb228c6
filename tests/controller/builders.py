"""Builders for controller tests: corpus manifests and small jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from batchgate import keys
from batchgate.policy import DEFAULT_POLICY
from webhook.rules.frameworks import apply_frameworks
from webhook.rules.mutation import framework_settings
from webhook.rules.review import GroupVersionKind

ROOT = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path:
    """shared/ sits beside the clone (CI) or beside the directory holding the worktrees; fail loudly otherwise."""
    for base in ROOT.parents:
        if (base / "shared" / "corpus").is_dir():
            return base / "shared" / "corpus"
    raise FileNotFoundError(f"shared/corpus not found beside {ROOT} or any parent")


def corpus(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((corpus_dir() / name).read_text())
    doc["metadata"].setdefault("namespace", "team-a")
    doc["metadata"].setdefault("uid", f"uid-{doc['metadata'].get('name', 'x')}")
    return doc


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
