"""An AppWrapper's detail page: its timeline, pods and components."""

from __future__ import annotations

from dashboard.views.appwrappers import appwrapper_detail
from tests.dashboard.states import appwrapper, event, pod


def test_appwrapper_timeline_merges_condition_transitions_and_its_own_events_in_time_order() -> None:
    aw = appwrapper("aw", phase="Running", conditions=[
        {"type": "QuotaReserved", "status": "True", "reason": "Admitted", "lastTransitionTime": "2025-01-01T00:00:05Z"}])
    events = [event("aw", "Resuming", "quota reserved", 7), event("aw", "Created", "queued", 1),
              event("other", "Created", "not mine", 2)]
    detail = appwrapper_detail(aw, [pod("aw-0", node_name="n1", appwrapper="aw"), pod("x", node_name="n2")], events)
    assert [t.what for t in detail.timeline] == ["Normal Created", "QuotaReserved=True", "Normal Resuming"]
    assert [(p.name, p.node) for p in detail.pods] == [("aw-0", "n1")]
    assert [(c.kind, c.name) for c in detail.components] == [("Job", "aw-job")]
