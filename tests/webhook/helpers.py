"""Builders shared by the gateway server tests: reviews, hostile reviews, the CLI in a subprocess."""

from __future__ import annotations

import base64
import datetime as _dt
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import jsonpatch
from hypothesis import strategies as st

from batchgate.clock import UTC
from webhook.serving.admission_review import review_document
from webhook.serving.launch import RunningGateway
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo
from tests.builders import sample, samples

REPO_ROOT = Path(__file__).resolve().parents[2]
NOW = _dt.datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
ALICE = UserInfo("alice", "uid-alice-1001", ("system:authenticated", "team-a"))
RELOAD_TIMEOUT_SECONDS = 20.0
BOB = UserInfo("bob", "uid-bob-1002", ("system:authenticated", "team-b"))


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


def policy_text(queue: str) -> str:
    return f"queues:\n  defaultQueueName: {queue}\n"


NOT_READY = "(worker has no policy yet)"


def injected_queue(gateway: RunningGateway, namespace: str = "team-a") -> str | None:
    """The queue label /mutate gives the demo's AppWrapper without one; None when it patches nothing."""
    client = gateway.client()
    job = sample("alice/appwrapper-job.yaml")
    status, reply = client.review("/mutate", review_for(job, namespace=namespace))
    client.close()
    if status == 503:
        return NOT_READY
    assert status == 200, reply
    if "patch" not in reply["response"]:
        return None
    ops = json.loads(base64.b64decode(reply["response"]["patch"]))
    return jsonpatch.apply_patch(job, ops)["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]


def wait_until_every_worker_injects(gateway: RunningGateway, queue: str | None, namespace: str = "team-a") -> None:
    """Fresh connections reach either worker; 20 in a row with the new queue means both reloaded."""
    deadline = time.monotonic() + RELOAD_TIMEOUT_SECONDS
    streak = 0
    while streak < 20:
        assert time.monotonic() < deadline, f"workers still inject an old queue, not {queue!r}"
        streak = streak + 1 if injected_queue(gateway, namespace) == queue else 0
        if streak == 0:
            time.sleep(0.1)


# --- hostile reviews (Hypothesis) ---------------------------------------------------------
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_junk = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c,
                                                                                         max_size=3), max_leaves=25)
template_junk = st.sampled_from(["a string", ["a", "list"], 7, None, {"spec": "x"}, {"spec": {"containers": "x"}},
                                 {"spec": {"containers": [None, 3]}}])


@st.composite
def hostile_reviews(draw: st.DrawFn) -> Any:
    """Reviews of the demo's samples with parts replaced by junk, or junk outright."""
    base = review_for(draw(st.sampled_from([o for _, o in samples()])), draw(st.sampled_from([ALICE, BOB])))
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(json_junk)
    if choice == 1:
        base["request"][draw(st.sampled_from(sorted(base["request"])))] = draw(json_junk)
    elif choice == 2:
        base["request"]["object"] = draw(json_junk)
    elif choice == 3 and base["request"]["object"].get("spec", {}).get("components"):
        base["request"]["object"]["spec"]["components"][0]["template"] = draw(template_junk)
    elif choice == 4:
        base["request"]["operation"] = "UPDATE"
        base["request"]["oldObject"] = draw(json_junk | st.just(base["request"]["object"]))
    else:
        spec = base["request"]["object"].setdefault("spec", {})
        if isinstance(spec, dict):
            spec[draw(st.text(max_size=10))] = draw(json_junk | template_junk)
    return base


def booted_workers(gateway: RunningGateway) -> int:
    return sum(1 for line in gateway.stderr_lines if "Booting worker" in line)


def with_all_workers(gateway: RunningGateway, args: tuple[str, ...], timeout: float = 30.0) -> RunningGateway:
    """The gateway once every worker `--workers` asked for has booted: it serves as soon as the first
    has, so a test that counts boots to see that none was replaced must not start before the last."""
    wanted = int(args[args.index("--workers") + 1]) if "--workers" in args else 2  # the CLI's default
    deadline = time.monotonic() + timeout
    while booted_workers(gateway) < wanted:
        assert gateway.process.poll() is None, "\n".join(gateway.stderr_lines[-20:])
        assert time.monotonic() < deadline, f"{booted_workers(gateway)} of {wanted} workers booted"
        time.sleep(0.05)
    return gateway
