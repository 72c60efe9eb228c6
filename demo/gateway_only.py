"""`batchgate demo --gateway-only`: the real gateway judging the samples, with no cluster at all.

The quick look at the gateway alone (a few seconds): fresh certificates in a temporary directory, `batchgate webhook` under gunicorn over TLS, then
every document of every manifest under the samples directory (demo/samples, or any other)
POSTed as an AdmissionReview from alice and from bob: `/mutate`, the returned JSON Patch applied as the API server would, then `/validate`. One
line per decision says who, what, allowed or not, and what changed.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

import jsonpatch
import yaml

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from webhook.serving.admission_review import review_document
from webhook.serving.client import GatewayClient
from webhook.serving.launch import start_gateway
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

USERS = (
    UserInfo("alice", "uid-alice-1001", ("system:authenticated", "team-a")),
    UserInfo("bob", "uid-bob-1002", ("system:authenticated", "team-b")),
)


def sample_objects(samples: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, object) for every Kubernetes object under `samples`, in a stable order."""
    for path in sorted(p for p in samples.rglob("*") if p.suffix in (".yaml", ".yml", ".json")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and "kind" in document and "apiVersion" in document:
                yield str(path.relative_to(samples)), document


def _leaves(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(f"{path}/{key}", child)
    else:
        yield path, value


def describe_patch(ops: Sequence[dict[str, Any]]) -> str:
    """What a JSON Patch sets, by the last key: `user=alice, suspend=true, schedulerName=x (x2)`."""
    if not ops:
        return "no change"
    counts: dict[str, int] = {}
    for op in ops:
        if op.get("op") == "remove":
            item = f"removed {op.get('path', '')}"
            counts[item] = counts.get(item, 0) + 1
            continue
        for path, value in _leaves(op.get("path", ""), op.get("value")):
            key = path.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~").rsplit("/", 1)[-1]
            text = value if isinstance(value, str) else json.dumps(value)
            item = f"{key}={text}"
            counts[item] = counts.get(item, 0) + 1
    return ", ".join(item if n == 1 else f"{item} (x{n})" for item, n in counts.items())


def request_for(obj: dict[str, Any], user: UserInfo, resource: str = "") -> AdmissionRequest:
    meta = found if isinstance(found := obj.get("metadata"), dict) else {}
    return AdmissionRequest(
        uid=str(uuid.uuid4()),
        kind=GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"]),
        operation="CREATE",
        user=user,
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        resource=resource,
        object=obj,
    )


def judge(client: GatewayClient, obj: dict[str, Any], user: UserInfo) -> tuple[bool, str]:
    """Mutate, apply the patch, validate; (allowed, one-line account) as the API server would see it."""
    status, reply = client.review("/mutate", review_document(request_for(obj, user)))
    response = reply.get("response", {}) if status == 200 else {}
    if not response.get("allowed"):
        return False, f"denied by /mutate: {response.get('status', reply).get('message', reply)}"
    ops = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    mutated = jsonpatch.apply_patch(obj, ops) if ops else obj
    status, reply = client.review("/validate", review_document(request_for(mutated, user)))
    response = reply.get("response", {}) if status == 200 else {}
    warnings = "".join(f" [warning: {w}]" for w in response.get("warnings", []))
    if not response.get("allowed"):
        status_body = response.get("status", reply)
        return False, f"denied ({status_body.get('code')}): {status_body.get('message')}{warnings}"
    return True, describe_patch(ops) + warnings


def run(samples: Path, workers: str) -> int:
    """Send every sample object from both users; 0 when every object got a decision, 2 on bad input."""
    objects = list(sample_objects(samples))
    if not objects:
        print(f"batchgate demo: no Kubernetes objects under {samples}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="batchgate-demo-") as tmp:
        cert_dir = Path(tmp) / "certs"
        write_serving_files(cert_dir, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        audit_log = Path(tmp) / "audit.log"
        # The built-in defaults, but for the per-component authorization of AppWrappers: it asks
        # the API server (SubjectAccessReviews) about the user and the controller, and there is
        # neither here.
        policy = Path(tmp) / "policy.yaml"
        policy.write_text("authorization: {userRBACCheck: false}\ncontrollers: {appWrapper: []}\n")
        gateway = start_gateway(cert_dir, "--workers", workers, "--policy-file", str(policy),
                                "--audit-log", str(audit_log))
        print(f"gateway: gunicorn over TLS at https://{gateway.host}:{gateway.port} (CA {cert_dir / 'ca.crt'})")
        print("policy: the built-in defaults, without per-component authorization (no API server to ask)")
        allowed = denied = 0
        try:
            client = gateway.client()
            for source, obj in objects:
                name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName", "") + "*"
                for user in USERS:
                    ok, account = judge(client, obj, user)
                    allowed, denied = allowed + ok, denied + (not ok)
                    verdict = "allowed" if ok else "DENIED "
                    print(f"{user.username:<5} {obj['kind']:<11} {name:<28} {verdict} {account}   ({source})")
            client.close()
        finally:
            gateway.stop()
        lines = audit_log.read_text().splitlines() if audit_log.exists() else []
        print(f"{allowed + denied} decisions: {allowed} allowed, {denied} denied; "
              f"{len(lines)} audit lines (one per /mutate and /validate call)")
    return 0
