"""The hostile-review fuzzer: N AdmissionReviews built from the demo's samples and from garbage, sent to
a real gateway over keep-alive TLS; every answer must be clear (issue 19).

Shapes, in turn: raw junk bytes, JSON nested up to 100,000 deep, huge integers, NUL characters,
random subtrees replaced by junk, controller ownerReferences claimed by users with forged identity
labels, framework pods with broken layouts (no leader, a billion workers), framework jobs of
millions of pods, policy ConfigMaps that are YAML bombs, annotations that are YAML bombs or
durations past Go's range, junk operations, kinds and users. An answer is clear when it is HTTP
200 with the request's uid and `allowed` or a 400/403 status, or an HTTP 400 for a body that is not
a review; never a 5xx, a code 500, or an exception's name. Prints the outcomes, the time, and
the workers' memory before and after. The suite runs the same generator at a small count
(tests/webhook/serving/test_hostile_fuzz.py).

    .venv/bin/python bench/hostile_reviews.py [--count 100000] [--connections 4] [--seed 19]
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate import keys  # noqa: E402
from batchgate.kinds import APPWRAPPER  # noqa: E402
from batchgate.clock import SystemClock  # noqa: E402
from certs.authority import service_names, write_serving_files  # noqa: E402
from demo.gateway_only import request_for, sample_objects  # noqa: E402
from demo.samples_scene import SAMPLES  # noqa: E402
from tests.builders import every_path  # noqa: E402
from webhook.rules.review import UserInfo  # noqa: E402
from webhook.serving.admission_review import review_document  # noqa: E402
from webhook.serving.launch import start_gateway  # noqa: E402

EXCEPTION_NAMES = ("Traceback", "RecursionError", "OverflowError", "IndexError", "KeyError", "TypeError",
                   "ValueError", "ReaderError", "AttributeError", "MemoryError")
USERS = (UserInfo("alice", "1001", ("system:authenticated",)), UserInfo("bob", "1002", ("system:authenticated",)))
LAUGHS = "\n".join(["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
                   + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)])
JUNK: tuple[Any, ...] = (None, True, 0, -1, 10**30, 1.5e308, "", "x" * 300, "\x00", [], {}, [None], {"a": None},
                         {"spec": "x"}, {"metadata": []}, ["a", {"b": [1, 2]}])


def _review(obj: Any, rng: random.Random, namespace: str = "team-a") -> dict[str, Any]:
    """The review the API server would send for `obj` (its kind as the request kind when readable)."""
    shell = {"apiVersion": "v1", "kind": "Pod"}
    if isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str):
        shell = {"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
    document = review_document(request_for(shell, rng.choice(USERS)))
    document["request"].update(namespace=namespace, object=obj)
    return document


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return value


def _nested(depth: int) -> bytes:
    return b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep","object":' + \
        b'{"a":' * depth + b"1" + b"}" * depth + b"}}"


def _framework_pod(framework: str, slots: list[dict[str, Any]]) -> dict[str, Any]:
    layout = {"framework": framework, "service": "s", "port": 1, "nproc_per_node": "auto", "hostfile_path": "/h",
              "slots_per_host": 1, "wait_image": "busybox", "wait_timeout_seconds": 1,
              "slots": [{"prefix": "p-", "start": 0, "subdomain": "s", **slot} for slot in slots]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p-0", "labels": {keys.FRAMEWORK_LABEL: framework, keys.JOB_COMPLETION_INDEX_LABEL: "0"},
        "annotations": {keys.FRAMEWORK_LAYOUT_ANNOTATION: json.dumps(layout), keys.HOST_PREFIX_ANNOTATION: "p-",
                        keys.JOB_COMPLETION_INDEX_ANNOTATION: "0"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


class HostileReviews:
    """A seeded generator of hostile review bodies (bytes)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.objects = [obj for _, obj in sample_objects(SAMPLES)]
        self.shapes: list[Callable[[], bytes]] = [
            self.raw_junk, self.deep, self.huge_integer, self.nul, self.junk_subtree, self.owner_claim,
            self.broken_layout, self.huge_framework_job, self.policy_bomb, self.annotation_bomb, self.junk_request,
        ]

    def next(self) -> bytes:
        return self.rng.choice(self.shapes)()

    def _object(self) -> dict[str, Any]:
        return copy.deepcopy(self.rng.choice(self.objects))

    def _json(self, document: Any) -> bytes:
        return json.dumps(document).encode()

    def raw_junk(self) -> bytes:
        base = self._json(_review(self._object(), self.rng))
        return self.rng.choice([base[: self.rng.randrange(len(base))], bytes(self.rng.randrange(256) for _ in range(64)),
                                b"\x00" * 32, b"[]", b"null", b'"x"'])

    def deep(self) -> bytes:
        return _nested(self.rng.choice([150, 199, 201, 1000, 5000, 100_000]))

    def huge_integer(self) -> bytes:
        obj = self._object()
        path = self.rng.choice(every_path(obj)[1:])
        return self._json(_review(_replace(obj, path, 10 ** self.rng.choice([20, 400, 4000])), self.rng))

    def nul(self) -> bytes:
        obj = self._object()
        obj.setdefault("metadata", {})["name"] = "a\x00b"
        obj["metadata"].setdefault("labels", {})["k"] = "\x00"
        return self._json(_review(obj, self.rng))

    def junk_subtree(self) -> bytes:
        obj = self._object()
        path = self.rng.choice(every_path(obj))
        return self._json(_review(_replace(obj, path, copy.deepcopy(self.rng.choice(JUNK))), self.rng))

    def owner_claim(self) -> bytes:
        obj = self._object()
        meta = obj.setdefault("metadata", {})
        owner = self.rng.choice([("v1", "ConfigMap"), (APPWRAPPER.api_version, "AppWrapper"), ("batch/v1", "Job")])
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": "o", "uid": "u", "controller": True}]
        meta.setdefault("labels", {}).update({keys.USER_LABEL: "someone-else", keys.USERID_LABEL: "0"})
        document = _review(obj, self.rng)
        if self.rng.random() < 0.5:
            document["request"]["operation"] = "UPDATE"
            document["request"]["oldObject"] = self._object()
        return self._json(document)

    def broken_layout(self) -> bytes:
        slots = self.rng.choice([
            ("pytorch", [{"role": "worker", "count": 2}]),
            ("mxnet", [{"role": "server", "count": 1}, {"role": "worker", "count": 2}]),
            ("tensorflow", [{"role": "worker", "count": 10**9}]),
            ("mpi", [{"role": "master", "count": 1}, {"role": "worker", "count": -3}]),
        ])
        return self._json(_review(_framework_pod(*slots), self.rng))

    def huge_framework_job(self) -> bytes:
        pods = self.rng.choice([3_000_000, 10**12])
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "big", "labels": {keys.FRAMEWORK_LABEL: self.rng.choice(["pytorch", "tensorflow", "mpi", "mxnet"]),
                                      keys.QUEUE_NAME_LABEL: "q"}},
               "spec": {"completionMode": "Indexed", "completions": pods, "parallelism": pods, "template": {
                   "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}
        return self._json(_review(job, self.rng))

    def policy_bomb(self) -> bytes:
        text = self.rng.choice([LAUGHS, "queues: " + "[" * 5000 + "]" * 5000, "queues: {defaultQueueName: \x00}",
                                "faultTolerance: {retryLimit: " + "9" * 5000 + "}"])
        configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "batchgate-policy", "namespace": "batchgate-system"},
                     "data": {"policy.yaml": text}}
        return self._json(_review(configmap, self.rng, namespace="batchgate-system"))

    def annotation_bomb(self) -> bytes:
        obj = self._object()
        key, value = self.rng.choice([
            ("batchgate.dev/failure-policy", LAUGHS),
            (keys.ADMISSION_GRACE_PERIOD_ANNOTATION, "9" * 30 + "h"),
            (keys.FRAMEWORK_ARGS_ANNOTATION, "[" * 5000),
        ])
        obj.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
        return self._json(_review(obj, self.rng))

    def junk_request(self) -> bytes:
        document = _review(self._object(), self.rng)
        field = self.rng.choice(["operation", "kind", "userInfo", "uid", "oldObject", "dryRun", "subResource"])
        document["request"][field] = copy.deepcopy(self.rng.choice(JUNK))
        return self._json(document)


def unclear(status: int, body: bytes, sent: bytes) -> str | None:
    """Why an answer is not clear, or None."""
    if status >= 500:
        return f"HTTP {status}"
    try:
        reply = json.loads(body)
    except ValueError:
        return "a reply that is not JSON"
    text = body.decode(errors="replace")
    named = [name for name in EXCEPTION_NAMES if name in text]
    if named:
        return f"an exception's name in the reply: {named[0]}"
    if status == 400:
        return None if reply.get("kind") == "Status" else "a 400 that is not a Status"
    if status != 200:
        return f"HTTP {status}"
    response = reply.get("response") or {}
    try:
        uid = json.loads(sent)["request"]["uid"]
    except (ValueError, KeyError, TypeError, RecursionError):
        uid = None
    if isinstance(uid, str) and response.get("uid") != uid:
        return "a uid mismatch"
    if not response.get("allowed") and (response.get("status") or {}).get("code") not in (400, 403):
        return f"a denial with code {(response.get('status') or {}).get('code')}"
    return None


def outcome(status: int, body: bytes) -> str:
    if status != 200:
        return f"HTTP {status}"
    response = json.loads(body).get("response") or {}
    if response.get("allowed"):
        return "allowed"
    return f"denied {response['status']['code']} {response['status'].get('reason', '')}"


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children")
    return [int(p) for p in children.read_text().split()] if children.exists() else []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--connections", type=int, default=4)
    p.add_argument("--seed", type=int, default=19)
    args = p.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    problems: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp) / "certs"
        write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        gateway = start_gateway(certs, "--audit-log", str(Path(tmp) / "audit.log"))
        try:
            deadline = time.monotonic() + 30
            while len(_worker_pids(gateway.process.pid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)  # the master reports it serves before it forks the workers
            gateway.client().request("GET", "/readyz")
            workers = _worker_pids(gateway.process.pid)
            before = {pid: _rss_kib(pid) for pid in workers}

            def send(index: int) -> None:
                """This connection's share, made as it goes (a 100,000-deep body is 600 KB)."""
                client = gateway.client()
                generator = HostileReviews(args.seed + index)
                for _ in range(index, args.count, args.connections):
                    body = generator.next()
                    path = "/mutate" if len(body) % 2 else "/validate"
                    try:
                        status, data, _ = client.request("POST", path, body)
                    except OSError as exc:
                        with lock:
                            problems[f"connection error {type(exc).__name__}"] += 1
                        continue
                    problem = unclear(status, data, body)
                    with lock:
                        counts[outcome(status, data) if status in (200, 400) and not problem else "unclear"] += 1
                        if problem:
                            problems[problem] += 1
                client.close()

            started = time.monotonic()
            threads = [threading.Thread(target=send, args=(i,)) for i in range(args.connections)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
            after = {pid: _rss_kib(pid) for pid in workers if Path(f"/proc/{pid}").exists()}
            restarted = sorted(set(_worker_pids(gateway.process.pid)) - set(workers))
        finally:
            gateway.stop()
    print(f"{args.count} hostile reviews (seeds {args.seed}..{args.seed + args.connections - 1}) over {args.connections} keep-alive TLS connections "
          f"in {elapsed:.1f} s ({args.count / elapsed:.0f}/s)")
    for name, count in counts.most_common():
        print(f"  {count:7d}  {name}")
    print(f"unclear answers: {sum(problems.values())}" + "".join(f"\n  {n:7d}  {w}" for w, n in problems.most_common()))
    print("worker RSS KiB before -> after: " + ", ".join(f"{before[pid]} -> {after.get(pid, 'gone')}" for pid in workers)
          + f"; workers restarted: {len(restarted)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
