"""Invariants of the AppWrapper phase machine over arbitrary states, with Hypothesis.

We test these aspects: a step never raises and names a known phase; terminal phases stay
terminal; a counted reset never takes resettingCount past retryLimit and nothing lowers it; a
step never both creates and deletes; waits are never negative; and writing a step's status
patch makes the same step a no-op (so a retried reconcile cannot flap conditions or times).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate import keys
from batchgate.api.appwrapper_status import read_appwrapper_state as state
from controller.decisions.appwrapper.lifecycle import decide
from controller.decisions.appwrapper.pods import PodCounts
from controller.decisions.appwrapper.transition import (
    ComponentState,
    CreateComponents,
    DeleteComponents,
    DeletePods,
    Observed,
    status_patch,
)
from tests.controller.decisions.appwrapper_builders import an_aw, at, timing

PHASES = (keys.PHASE_EMPTY, keys.PHASE_SUSPENDED, keys.PHASE_RESUMING, keys.PHASE_RUNNING, keys.PHASE_RESETTING,
          keys.PHASE_SUSPENDING, keys.PHASE_SUCCEEDED, keys.PHASE_FAILED)
CONDITIONS = (keys.COND_QUOTA_RESERVED, keys.COND_RESOURCES_DEPLOYED, keys.COND_PODS_READY, keys.COND_UNHEALTHY,
              keys.COND_DELETING_RESOURCES)
small = st.integers(0, 3)


@st.composite
def appwrappers(draw: Any) -> dict[str, Any]:
    builder = an_aw(replicas=tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))))
    phase = draw(st.sampled_from(PHASES))
    builder.in_phase(phase).suspended(draw(st.booleans())).resets(draw(small))
    if draw(st.booleans()):
        builder.with_finalizer()
    if phase != keys.PHASE_EMPTY:
        builder.components_deployed(draw(st.sampled_from(["True", "False", "Unknown"])), draw(st.integers(0, 300)))
    for type_ in CONDITIONS:
        status = draw(st.sampled_from([None, "True", "False"]))
        if status is not None:
            builder.with_condition(type_, status, "Test", draw(st.integers(0, 300)))
    if draw(st.integers(0, 4)) == 0:
        builder.being_deleted()
    return builder.build()


observations = st.builds(
    Observed,
    components=st.dictionaries(st.integers(0, 1), st.builds(
        ComponentState, exists=st.booleans(), deleting=st.booleans(),
        failure=st.none() | st.just(("BackoffLimitExceeded", "backoff limit")))),
    pods=st.builds(PodCounts, pending=small, running=small, succeeded=small, failed=small,
                   failed_exit_codes=st.sampled_from([(), (1,), (42,)]),
                   evicting=st.sampled_from([(), ("p",)]), evicting_nodes=st.sampled_from([(), ("n",)]),
                   present=st.integers(0, 6)))
timings = st.builds(lambda limit, grace, ttl, hold: timing(retry_limit=limit, failure_grace=grace, admission_grace=grace,
                                                           warmup_grace=grace * 2, retry_pause=grace, success_ttl=ttl,
                                                           deletion_on_failure_grace=hold, forceful_deletion_grace=grace),
                    st.integers(0, 4), st.integers(0, 120), st.integers(1, 600), st.sampled_from([0, 60]))


def applied(aw: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    if not patch:
        return aw
    return {**aw, "status": {**(aw.get("status") or {}), **patch["status"]}}


@settings(max_examples=400, deadline=None)
@given(aw=appwrappers(), observed=observations, timing_=timings, now=st.integers(0, 1000))
def test_every_step_keeps_the_machines_invariants(aw: dict[str, Any], observed: Observed, timing_: Any, now: int) -> None:
    before = (aw.get("status") or {}).get("phase", "")
    step = decide(state(aw), observed, timing_, at(now))
    if step is None:
        return
    assert step.phase in PHASES + (keys.PHASE_TERMINATING,)
    deleting = bool(aw["metadata"].get("deletionTimestamp"))
    if before in (keys.PHASE_SUCCEEDED, keys.PHASE_FAILED) and not deleting:
        assert step.phase == before, "terminal phases stay terminal"
    if step.resetting_count is not None:
        count = state(aw).resetting_count
        assert step.resetting_count >= count
        assert step.resetting_count == count or step.resetting_count <= timing_.retry_limit
    creates = any(isinstance(a, CreateComponents) for a in step.actions)
    deletes = any(isinstance(a, (DeleteComponents, DeletePods)) for a in step.actions)
    assert not (creates and deletes)
    assert step.requeue_after is None or step.requeue_after >= _dt.timedelta(0)

    written = applied(aw, status_patch(state(aw), step, at(now)))
    assert status_patch(state(written), step, at(now + 5)) is None, "re-applying a written step changes nothing"
