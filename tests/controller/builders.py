"""Builders for controller tests: corpus manifests and small jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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
