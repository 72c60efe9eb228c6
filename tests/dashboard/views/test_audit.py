"""The audit page's view of the gateway's audit log lines."""

from __future__ import annotations

from dashboard.views.audit import audit_view
from tests.dashboard.states import audit_line


def test_audit_view_shows_newest_first_and_counts_lines_that_are_not_records() -> None:
    lines = [audit_line("alice", "one", True, patch=True), "not json", '{"msg": "log line"}',
             audit_line("bob", "two", False, code=403), ""]
    view = audit_view(lines)
    assert [(r.user, r.object, r.verdict) for r in view.rows] == [("bob", "ns/two", "denied 403"),
                                                                   ("alice", "ns/one", "allowed, patched")]
    assert view.unreadable_lines == 2
