"""kube-apiserver's audit log, read as the least-privilege check reads requests: the same
`RecordedRequest` records the stand-in's recorder counts (localcluster/authorization.py), so a
test compares what an account used with what its roles grant on either cluster.

The policy logs every request at level Metadata (who, verb, object reference, the authorizer's
decision in the `authorization.k8s.io/decision` annotation; no bodies) and leaves out the
RequestReceived stage. A request counts once, at its ResponseComplete event; a long-running one
(a watch) logs ResponseStarted first and completes only when it ends, so until then it is open.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.authorization import RecordedRequest

POLICY: dict[str, Any] = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                          "rules": [{"level": "Metadata"}]}
DECISION = "authorization.k8s.io/decision"
COMPLETE = "ResponseComplete"
STARTED = "ResponseStarted"
LOG_NAME = "audit.log"
MAX_SIZE_MB = 100
MAX_BACKUPS = 20
"""Rotation at 100 MB, at most 20 old files kept: 2 GB of requests, far more than a test run makes."""


class AuditLogError(ValueError):
    """The audit log cannot be read: a line that is not an audit event (named with its file and
    line), or no log at all."""


@dataclass(frozen=True)
class AuditLog:
    """Requests by how often each completed, and those started that have not completed yet."""

    completed: Counter[RecordedRequest]
    open: Counter[RecordedRequest]


def apiserver_flags(directory: Path) -> list[str]:
    """kube-apiserver's flags for a JSON audit log in `directory`, with its policy written there."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "policy.json"
    policy.write_text(json.dumps(POLICY))
    return ["--audit-policy-file", str(policy), "--audit-log-path", str(directory / LOG_NAME),
            "--audit-log-format", "json", "--audit-log-maxsize", str(MAX_SIZE_MB),
            "--audit-log-maxbackup", str(MAX_BACKUPS), "--audit-log-maxage", "0"]


def recorded_request(event: Mapping[str, Any]) -> RecordedRequest | None:
    """The request an event is about, as whom the authorizer judged it (the impersonated user if
    any); None for a request to a path that names no resource, as the stand-in records none."""
    ref = event.get("objectRef")
    if not isinstance(ref, dict) or not ref.get("resource"):
        return None
    user = event.get("impersonatedUser") or event.get("user") or {}
    annotations = event.get("annotations") or {}
    return RecordedRequest(str(user.get("username", "")), str(event.get("verb", "")), str(ref.get("apiGroup", "")),
                           str(ref["resource"]), str(ref.get("subresource", "")), str(ref.get("namespace", "")),
                           annotations.get(DECISION) == "allow")


def events(lines: Iterable[str], source: str = LOG_NAME) -> Iterator[dict[str, Any]]:
    """The audit events of one log file. A last line without its newline is still being written
    and is left for the next read."""
    for number, line in enumerate(lines, 1):
        if not line.endswith("\n"):
            return
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise AuditLogError(f"{source}:{number}: not a JSON audit event: was the log written with "
                                "--audit-log-format json?") from None
        if not isinstance(event, dict) or event.get("kind") != "Event" or "auditID" not in event:
            raise AuditLogError(f"{source}:{number}: not an audit event (kind Event with an auditID)")
        yield event


def summarize(logged: Iterable[Mapping[str, Any]]) -> AuditLog:
    """Each request once, at its ResponseComplete (by auditID); a request whose ResponseStarted
    has no ResponseComplete yet is open."""
    completed: dict[str, RecordedRequest] = {}
    started: dict[str, RecordedRequest] = {}
    for event in logged:
        request = recorded_request(event)
        if request is None:
            continue
        if event.get("stage") == COMPLETE:
            completed[event["auditID"]] = request
        elif event.get("stage") == STARTED:
            started[event["auditID"]] = request
    return AuditLog(Counter(completed.values()),
                    Counter(r for audit_id, r in started.items() if audit_id not in completed))


def log_files(directory: Path) -> list[Path]:
    """The rotated backups (`audit-<time>.log`, oldest first), then the current log."""
    current = directory / LOG_NAME
    return sorted(directory.glob("audit-*.log")) + ([current] if current.exists() else [])


def read_log(directory: Path) -> AuditLog:
    """Every file of the directory's log, read as one (a watch may start before a rotation and
    complete after it)."""
    files = log_files(directory)
    if not files:
        raise AuditLogError(f"no audit log in {directory}: was kube-apiserver started with --audit-log-path there?")

    def logged() -> Iterator[dict[str, Any]]:
        for path in files:
            with open(path, encoding="utf-8") as handle:
                yield from events(handle, str(path))
    return summarize(logged())
