"""The Lease decision: create, renew, wait or take over, as a table."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from controller.decisions.leader_election import LeaseTiming, decide_lease, micro_time


NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
T = LeaseTiming()


def lease(holder: str, renewed: dt.datetime, transitions: int = 0) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": "7"}, "spec": {
        "holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": micro_time(renewed),
        "renewTime": micro_time(renewed), "leaseTransitions": transitions}}


@pytest.mark.parametrize(
    "observed,expected_action,expected_holder,transitions",
    [
        pytest.param(None, "create", "me", 0, id="with no lease the candidate creates it"),
        pytest.param(lease("me", NOW - dt.timedelta(seconds=5)), "renew", "me", 0, id="the holder renews"),
        pytest.param(lease("other", NOW - dt.timedelta(seconds=10)), "wait", "other", None,
                     id="a live lease held by another makes the candidate wait"),
        pytest.param(lease("other", NOW - dt.timedelta(seconds=16), 2), "acquire", "me", 3,
                     id="an expired lease is taken over and the transition counted"),
        pytest.param(lease("", NOW, 2), "acquire", "me", 3,
                     id="a released lease is free and taking it is counted as a transition"),
    ],
)
def test_lease_decisions(observed: dict[str, Any] | None, expected_action: str, expected_holder: str,
                         transitions: int | None) -> None:
    decision = decide_lease(observed, "me", NOW, T)
    assert (decision.action, decision.holder) == (expected_action, expected_holder)
    if transitions is not None:
        assert decision.spec is not None and decision.spec["leaseTransitions"] == transitions
        assert decision.spec["renewTime"] == "2026-01-01T12:00:00.000000Z"
