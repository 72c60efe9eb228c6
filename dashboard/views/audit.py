"""Recent gateway decisions from the audit log (one JSON object per line, docs/webhook.md, "Audit log")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

AUDIT_ROWS = 200
"""Decisions shown: the newest ones; `grep` the log itself for anything older."""


@dataclass(frozen=True)
class AuditRow:
    ts: str
    user: str
    operation: str
    kind: str
    object: str  # namespace/name
    verdict: str  # "allowed", "allowed, patched", "denied 403"
    reason: str
    message: str


@dataclass(frozen=True)
class AuditView:
    rows: tuple[AuditRow, ...]  # newest first
    unreadable_lines: int  # lines that are not audit records (a partial last line, other logging)


def audit_view(lines: Iterable[str], limit: int = AUDIT_ROWS) -> AuditView:
    rows: list[AuditRow] = []
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(record, dict) or "allowed" not in record:
            bad += 1
            continue
        allowed = record.get("allowed") is True
        verdict = ("allowed, patched" if record.get("patch") else "allowed") if allowed else f"denied {record.get('code', '')}".strip()
        ns, name = str(record.get("namespace") or ""), str(record.get("name") or "")
        rows.append(AuditRow(str(record.get("ts", "")), str(record.get("user", "")), str(record.get("operation", "")),
                             str(record.get("kind", "")).rsplit("/", 1)[-1], f"{ns}/{name}" if ns else name, verdict,
                             str(record.get("reason") or ""), str(record.get("message") or "")))
    rows.reverse()
    return AuditView(tuple(rows[:limit]), bad)
