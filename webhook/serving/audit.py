"""The audit log (docs/webhook.md, "Audit log"): one self-contained JSON line per gateway decision.

`audit_record` is pure; `AuditLog` writes each line with a single `os.write` on an O_APPEND
descriptor, so lines from several gunicorn workers never interleave.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import sys
import threading
from typing import Any, Mapping

from webhook.serving.admission_review import Reply
from webhook.rules.review import AdmissionRequest

log = logging.getLogger("batchgate.webhook.audit")


def _object_name(request: AdmissionRequest) -> str:
    if request.name:
        return request.name
    for obj in (request.object, request.old_object):
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(meta, dict):
            name, generate = meta.get("name"), meta.get("generateName")
            if isinstance(name, str) and name:
                return name
            if isinstance(generate, str) and generate:
                return generate + "*"
    return ""


def audit_record(
    *,
    now: _dt.datetime,
    endpoint: str,
    reply: Reply,
    request: AdmissionRequest | None = None,
    partial: Mapping[str, Any] | None = None,
    policy_version: str = "",
    duration_ms: float = 0.0,
) -> dict[str, Any]:
    """One audit line. For a malformed review, `partial` holds whatever could be read of it.

    Besides the review and its verdict: `endpoint` (mutate or validate), `warnings`, and `pid` (which
    gunicorn worker decided, for reading a line next to that worker's log).
    """
    seen: Mapping[str, Any] = partial or {}
    kind = request.kind if request else seen.get("kind")
    user = request.user if request else seen.get("user")
    return {
        "ts": now.astimezone(_dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "endpoint": endpoint,
        "uid": reply.uid or seen.get("uid", ""),
        "operation": request.operation if request else seen.get("operation", ""),
        "kind": f"{kind.group}/{kind.version}/{kind.kind}" if kind else "",
        "namespace": request.namespace if request else seen.get("namespace", ""),
        "name": _object_name(request) if request else seen.get("name", ""),
        "user": user.username if user else "",
        "groups": list(user.groups) if user else [],
        "allowed": reply.allowed,
        "code": reply.code,
        "reason": reply.reason,
        "message": reply.message,
        "patch": [{"op": op.get("op"), "path": op.get("path")} for op in reply.patch],
        "warnings": list(reply.warnings),
        "policyVersion": policy_version,
        "dryRun": request.dry_run if request else False,
        "durationMs": round(duration_ms, 3),
        "pid": os.getpid(),
    }


class AuditLog:
    """Appends audit lines to a file (created if missing) or to stdout."""

    def __init__(self, path: str | None = None):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None
        self._lock = threading.Lock()
        self._failing = False

    def write(self, record: Mapping[str, Any]) -> bool:
        """Append one line; False (and one logged error per failure streak) when it cannot.

        A full disk or a closed stdout must not turn an admission decision into a 500, so the
        caller answers the review anyway and counts the lost line.
        """
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            try:
                fd = self._fd if self._fd is not None else sys.stdout.fileno()
                view = memoryview(line)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            except (OSError, ValueError) as exc:
                if not self._failing:
                    log.error("audit log %s not writable, lines are being lost: %s", self.path or "stdout", exc)
                self._failing = True
                return False
            self._failing = False
            return True

    def close(self) -> None:
        """Close the file; later writes fail (and are counted) rather than go to stdout."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = -1

