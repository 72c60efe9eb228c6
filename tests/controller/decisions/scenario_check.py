"""Comparing a simulation step report with a scenario's expectation, field by field."""

from __future__ import annotations

from typing import Any

from controller.simulation import StepReport, run_trace


def expect(*, admitted: list[str] | None = None, flavors: dict[str, Any] | None = None,
           into: dict[str, str] | None = None, preempted: list[tuple[str, str, str]] | None = None,
           pending: dict[str, tuple[str, str | None]] | None = None, counts: dict[str, int] | None = None,
           ) -> dict[str, Any]:
    """What one step must show; omitted parts are not checked.

    `pending` maps a workload to (queue, reason); a reason of None is not compared.
    `preempted` lists (victim, reason, preemptor). `into` maps admitted workloads to ClusterQueues.
    """
    return {k: v for k, v in locals().items() if v is not None}


def check(report: StepReport, want: dict[str, Any]) -> None:
    got_admitted = {a["name"]: a for a in report.admitted}
    if "admitted" in want:
        assert sorted(got_admitted) == sorted(want["admitted"]), report.to_json()
    for name, flavors in want.get("flavors", {}).items():
        assert got_admitted[name]["flavors"] == flavors
    for name, cq in want.get("into", {}).items():
        assert got_admitted[name]["clusterQueue"] == cq
    if "preempted" in want:
        got = sorted((p["name"], p["reason"], p["by"]) for p in report.preempted)
        assert got == sorted(want["preempted"]), report.to_json()
    got_pending = {p["name"]: p for p in report.pending}
    for name, (queue, reason) in want.get("pending", {}).items():
        assert name in got_pending, f"{name} is not pending: {report.to_json()}"
        assert got_pending[name]["queue"] == queue, got_pending[name]
        if reason is not None:
            assert got_pending[name]["reason"] == reason
    for key, value in want.get("counts", {}).items():
        assert report.counts[key] == value, report.counts


def check_scenario(scenario: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """Run the trace; each step's report must show what `steps` expects of it, one for one."""
    reports = run_trace(scenario)
    assert len(reports) == len(steps)
    for report, want in zip(reports, steps):
        check(report, want)
