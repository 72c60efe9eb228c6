"""The AppWrapper differential (bench/peers/appwrapper_differential.py): how it normalises an
AppWrapper's watched versions into a timeline and what it calls a difference. The runs themselves
(two real control planes with both stacks) are a bench command, not part of the suite."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from bench.peers.appwrapper_differential import Timeline, differences, owned_by, scenario_names, timeline


def version(phase: str = "", *conditions: tuple[str, str, str], resetting: int | None = None,
            deleting: bool = False, when: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": t, "status": s, "reason": r, "message": f"{t} at {when}",
                                              "lastTransitionTime": when} for t, s, r in conditions]}
    if phase:
        status["phase"] = phase
    if resetting is not None:
        status["resettingCount"] = resetting
    meta: dict[str, Any] = {"name": "aw", "uid": f"uid-{when}"}
    if deleting:
        meta["deletionTimestamp"] = when
    return {"metadata": meta, "status": status}


QR, RD = ("QuotaReserved", "True", "Resuming"), ("ResourcesDeployed", "True", "Resuming")
UPSTREAM_RESET = [version(), version("Suspended"), version("Resuming", QR, RD),
                  version("Resetting", QR, RD, ("Unhealthy", "True", "FoundFailedPods"), resetting=1),
                  version("Resetting", QR, ("ResourcesDeployed", "False", "Resetting"), resetting=1),
                  version("Resuming", QR, RD, resetting=1), version("Running", QR, RD, resetting=1)]


def test_a_timeline_keeps_phases_counts_and_each_conditions_changes_without_repeats_or_the_empty_phase() -> None:
    got = timeline(UPSTREAM_RESET, [])
    assert got == Timeline(
        phases=("Suspended", "Resuming", "Resetting", "Resuming", "Running"), resetting=(0, 1),
        conditions={"QuotaReserved": (("True", "Resuming"),),
                    "ResourcesDeployed": (("True", "Resuming"), ("False", "Resetting"), ("True", "Resuming")),
                    "Unhealthy": (("True", "FoundFailedPods"),)},
        workload={})


def test_times_uids_and_messages_do_not_make_two_timelines_differ() -> None:
    later = [version(v["status"].get("phase", ""), *[(c["type"], c["status"], c["reason"])
                                                     for c in v["status"]["conditions"]],
                     resetting=v["status"].get("resettingCount"), when="2027-06-01T12:34:56Z") for v in UPSTREAM_RESET]
    assert differences("aw", timeline(UPSTREAM_RESET, []), timeline(later, [])) == []


def test_two_conditions_written_in_one_update_or_in_two_make_the_same_timeline() -> None:
    together = [version("Resuming", QR, RD)]
    apart = [version("Resuming", QR), version("Resuming", QR, RD)]
    assert differences("aw", timeline(together, []), timeline(apart, [])) == []


def test_a_resetting_count_left_out_counts_as_zero() -> None:
    assert timeline([version("Running", resetting=0)], []) == timeline([version("Running")], [])


DIFFERENT = [
    pytest.param([version("Suspended"), version("Running")],
                 [version("Suspended"), version("Resuming"), version("Running")],
                 "aw phases: upstream Suspended > Running; batchgate Suspended > Resuming > Running",
                 id="a phase one side passes through and the other does not differs"),
    pytest.param([version("Failed", ("Unhealthy", "True", "FailedComponent"))],
                 [version("Failed", ("Unhealthy", "True", "FoundFailedPods"))],
                 "aw condition Unhealthy: upstream True/FailedComponent; batchgate True/FoundFailedPods",
                 id="a condition's reason differs"),
    pytest.param([version("Running")], [version("Running", ("PodsReady", "True", "SufficientPodsReady"))],
                 "aw condition PodsReady: upstream none; batchgate True/SufficientPodsReady",
                 id="a condition only one side writes differs"),
    pytest.param([version("Failed", resetting=2)], [version("Failed", resetting=1)],
                 "aw resettingCount: upstream 2; batchgate 1", id="the retry count differs"),
    pytest.param([version("Running"), version("Running", deleting=True)],
                 [version("Running"), version("Terminating", deleting=True)],
                 "aw deletion began in: upstream Running; batchgate Terminating",
                 id="the phase a deletion began in differs"),
]


@pytest.mark.parametrize(("upstream", "batchgate", "line"), DIFFERENT)
def test_each_difference_is_one_line_naming_the_appwrapper_and_both_sides(
        upstream: list[dict[str, Any]], batchgate: list[dict[str, Any]], line: str) -> None:
    assert line in differences("aw", timeline(upstream, []), timeline(batchgate, []))


def workload(owner: str, *conditions: tuple[str, str, str]) -> dict[str, Any]:
    body = version("", *conditions)
    body["metadata"] = {"name": f"appwrapper-{owner}-x1", "ownerReferences": [{"kind": "AppWrapper", "name": owner}]}
    return body


def test_workloads_are_matched_to_their_appwrapper_by_owner_not_by_name_and_their_conditions_compared() -> None:
    mine = workload("aw", ("QuotaReserved", "True", "QuotaReserved"), ("Evicted", "True", "Preempted"))
    others = workload("other", ("Finished", "True", "Succeeded"))
    assert owned_by([mine, others], "aw") == [mine]
    upstream = timeline([version("Suspended")], owned_by([mine, others], "aw"))
    batchgate = timeline([version("Suspended")], [workload("aw", ("QuotaReserved", "True", "QuotaReserved"))])
    assert differences("aw", upstream, batchgate) == [
        "aw Workload condition Evicted: upstream True/Preempted; batchgate none"]


def test_an_unknown_scenario_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="no scenario sucess: choose from succeeds, retries"):
        scenario_names("sucess,retries")
    assert scenario_names("retries,succeeds") == ["retries", "succeeds"]
