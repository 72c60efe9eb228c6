"""The digest of what the dashboard observed: pending workloads in admission order."""

from __future__ import annotations

from dashboard.views.digest import digest
from tests.controller.decisions.trace_builders import T0
from tests.dashboard.states import observed, team_queues


def test_pending_workloads_keep_admission_order_with_positions_per_cluster_queue() -> None:
    d = digest(observed(team_queues(pending=3)), T0)
    assert [(p.position, p.name, p.local_queue) for p in d.pending] == [
        (1, "ta/w00000", "ta/lq"), (2, "ta/w00001", "ta/lq"), (3, "ta/w00002", "ta/lq")]
    assert all("cpu" in p.reason for p in d.pending)  # the check's own reason: 9 cpu cannot fit in 4 + 4
