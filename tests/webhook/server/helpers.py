"""Builders shared by the gateway server tests: corpus objects, reviews, the CLI in a subprocess."""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from batchgate.clock import UTC
from webhook.admission_review import review_document
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

REPO_ROOT = Path(__file__).resolve().parents[3]
NOW = _dt.datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
ALICE = UserInfo("alice", "uid-alice-1001", ("system:authenticated", "team-a"))
BOB = UserInfo("bob", "uid-bob-1002", ("system:authenticated", "team-b"))


def corpus_dir() -> Path:
    """`shared/corpus` beside the clone (CI) or beside an ancestor (a worktree); fail loudly if absent."""
    for folder in REPO_ROOT.parents:
        if (folder / "shared" / "corpus").is_dir():
            return folder / "shared" / "corpus"
    raise FileNotFoundError(f"shared/corpus not found beside {REPO_ROOT} or any parent")


def corpus_objects() -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every object in the corpus manifests."""
    found = []
    for path in sorted(corpus_dir().rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and "kind" in doc:
                found.append((str(path.relative_to(corpus_dir())), doc))
    assert len(found) >= 15, "the corpus should hold the AppWrapper and MLBatch samples"
    return found


def corpus(name: str) -> dict[str, Any]:
    return yaml.safe_load((corpus_dir() / name).read_text())


def request_for(obj: Any, user: UserInfo = ALICE, operation: str = "CREATE", old: Any = None,
                namespace: str = "team-a", kind: GroupVersionKind | None = None) -> AdmissionRequest:
    if kind is None:
        kind = GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"])
    name = (obj.get("metadata") or {}).get("name", "") if isinstance(obj, dict) else ""
    return AdmissionRequest(uid=str(uuid.uuid4()), kind=kind, operation=operation, user=user,  # type: ignore[arg-type]
                            namespace=namespace, name=name or "", object=obj, old_object=old)


def review_for(obj: Any, user: UserInfo = ALICE, **kwargs: Any) -> dict[str, Any]:
    return review_document(request_for(obj, user, **kwargs))


def run_cli(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m batchgate.cli ARGS` against this worktree's code."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "batchgate.cli", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=REPO_ROOT)


