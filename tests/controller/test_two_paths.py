"""`batchgate simulate` and the live controller take one admission path: every simulate trace of
the test suite, replayed through the controller's real AdmissionLoop (on a fake clock, writing to
a recording API whose changes come back to it as watch events), admits, preempts and leaves
pending the same workloads, for the same reasons, as the simulation does."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Callable, Iterator, Mapping

import pytest

from batchgate.clock import FakeClock, format_time
from batchgate.policy import Policy
from controller.adapters.admission import AdmissionLoop
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.quota.admission_status import release_patch
from controller.simulation import StepReport, run_trace
from controller.decisions.quota.queue_status import NOT_YET_TRIED
from tests.controller.recording_api import RecordingApi
from tests.controller.decisions.trace_builders import wl_key
from tests.controller.simulate_traces import all_traces

MAX_CYCLES_PER_STEP = 1_000
WORKLOADS = RESOURCES["Workload"]
UID = re.compile(r"\(UID: ([^)]*)\)")


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    return condition(obj, kind).get("status") == "True"


def name_of(obj: Mapping[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


class LiveWorld:
    """What a trace drives, played by the controller's AdmissionLoop.

    The trace's Workloads are given a controlling Job (which does not exist), as a job
    integration's Workloads have: the loop marks a victim Evicted and waits; this world then
    plays the job that stops, writing the release the job integration writes, before the next
    cycle — the simulation's model of a preempted job.
    """

    def __init__(self, clock: FakeClock, policy: Policy) -> None:
        self.clock = clock
        self.store = SharedStore()
        self.api = RecordingApi(self._deliver)
        writer = Writer(self.api, lambda: True)  # type: ignore[arg-type]
        self.loop = AdmissionLoop(self.store, writer, EventRecorder(writer, clock, "replay"), clock,
                                  ControllerMetrics(), lambda: True, writers=4)
        self.loop.apply_policy(policy)
        self.loop.writes.start()
        self._seen_writes = 0  # writes already reported
        self._scanned_writes = 0  # writes already looked at for evictions
        self._stopping: set[str] = set()  # evicted by the loop: their jobs stop before the next cycle

    def _deliver(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        change = self.store.apply(kind, event, obj)
        if change is not None:
            self.loop.on_change(change)

    # --- the trace's verbs -------------------------------------------------------------------
    def apply(self, raw: Mapping[str, Any], *, created: _dt.datetime | None = None) -> None:
        obj = dict(raw)
        if obj.get("kind") == "Workload":
            meta = dict(obj.get("metadata") or {})
            meta.setdefault("creationTimestamp", (created or self.clock.now()).isoformat().replace("+00:00", "Z"))
            meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"],
                                        "uid": f"job-{meta['name']}", "controller": True}]
            obj["metadata"] = meta
        self.api.put(obj)

    def delete(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        self.api.remove("Workload", namespace, name)

    def finish(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        wl = self.api.get(WORKLOADS, name, namespace)
        finished = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "Job finished",
                    "lastTransitionTime": format_time(self.clock.now())}
        conditions = [c for c in (wl.get("status") or {}).get("conditions") or [] if c["type"] != "Finished"]
        self.api.set_status("Workload", namespace, name, {"status": {"conditions": [*conditions, finished]}})

    def run(self, cycles: int | None) -> None:
        for _ in range(MAX_CYCLES_PER_STEP if cycles is None else cycles):
            stopped = self._stop_evicted_jobs()
            changed = self.loop.cycle()
            assert self.loop.writes.join(timeout=60), "the loop's writes did not finish"
            self._note_evictions()
            if cycles is None and not (changed or stopped):
                return
        assert cycles is not None, f"admission did not settle within {MAX_CYCLES_PER_STEP} cycles"

    def _note_evictions(self) -> None:
        writes, self._scanned_writes = self.api.writes[self._scanned_writes:], len(self.api.writes)
        for write in writes:
            if write.kind == "Workload" and is_true(write.after, "Evicted") and not is_true(write.before, "Evicted"):
                self._stopping.add(f"{write.namespace}/{write.name}")

    def _stop_evicted_jobs(self) -> bool:
        stopping, self._stopping = self._stopping, set()
        for key in sorted(stopping):
            namespace, _, name = key.partition("/")
            patch = release_patch(self.api.get(WORKLOADS, name, namespace), self.clock.now())
            if patch is not None:
                self.api.set_status("Workload", namespace, name, patch)
        return bool(stopping)

    # --- what happened ------------------------------------------------------------------------
    def take_report(self) -> StepReport:
        """Admissions and preemptions as the loop wrote them this step; pending workloads as the
        API shows them (the reason is the QuotaReserved message the loop wrote)."""
        self.loop.write_reasons(self.clock.now())
        report = StepReport()
        workloads = self.api.find("Workload")
        by_uid = {wl["metadata"].get("uid") or name_of(wl): name_of(wl) for wl in workloads}
        for write in self.api.writes[self._seen_writes:]:
            if write.kind != "Workload":
                continue
            admission = (write.after.get("status") or {}).get("admission")
            if admission and not (write.before.get("status") or {}).get("admission"):
                report.admitted.append({"name": f"{write.namespace}/{write.name}",
                                        "clusterQueue": admission["clusterQueue"],
                                        "flavors": {psa["name"]: dict(sorted(psa["flavors"].items()))
                                                    for psa in admission["podSetAssignments"]}})
            if is_true(write.after, "Preempted") and not is_true(write.before, "Preempted"):
                preempted = condition(write.after, "Preempted")
                report.preempted.append({"name": f"{write.namespace}/{write.name}", "reason": preempted["reason"],
                                         "by": by_uid[UID.search(preempted["message"]).group(1)]})  # type: ignore[union-attr]
        self._seen_writes = len(self.api.writes)
        reserving = admitted = 0
        for wl in workloads:
            if is_true(wl, "Finished"):
                continue
            if (wl.get("status") or {}).get("admission"):
                reserving += 1
                admitted += not is_true(wl, "Evicted")
                continue
            reserved = condition(wl, "QuotaReserved")
            queue, _ = self.loop.state.pending_reason(wl_key(name_of(wl)))
            report.pending.append({"name": name_of(wl), "queue": queue,
                                   "reason": reserved.get("message", "") if reserved.get("status") == "False" else ""})
        report.counts = {"pendingActive": sum(p["queue"] == "active" for p in report.pending),
                         "pendingInadmissible": sum(p["queue"] == "inadmissible" for p in report.pending),
                         "reserving": reserving, "admitted": admitted}
        return report

    def close(self) -> None:
        self.loop.writes.stop()


@pytest.fixture
def live_worlds() -> Iterator[list[LiveWorld]]:
    """Worlds made by `live` below, closed after the test."""
    worlds: list[LiveWorld] = []
    yield worlds
    for world in worlds:
        world.close()


@pytest.fixture
def live(live_worlds: list[LiveWorld]) -> Callable[[FakeClock, Policy], LiveWorld]:
    """A world factory for `run_trace`."""
    def make(clock: FakeClock, policy: Policy) -> LiveWorld:
        live_worlds.append(LiveWorld(clock, policy))
        return live_worlds[-1]
    return make


def comparable(report: StepReport) -> dict[str, Any]:
    """A step as both paths can tell it: a workload no cycle has looked at yet is pending with no
    reason in the simulation and with the controller's placeholder on the cluster."""
    pending = [{**p, "reason": p["reason"] or NOT_YET_TRIED} for p in report.pending]
    return {"admitted": sorted(report.admitted, key=lambda a: a["name"]),
            "preempted": sorted(report.preempted, key=lambda p: (p["name"], p["by"])),
            "pending": sorted(pending, key=lambda p: p["name"]), "counts": report.counts}


TRACES = all_traces()


def test_the_replay_covers_every_kind_of_trace() -> None:
    assert len(TRACES) >= 90, "the catalogue lost traces"
    assert any(name.startswith("simulate: ") for name, _ in TRACES)
    assert any(name.startswith("fair sharing: ") for name, _ in TRACES)


@pytest.mark.parametrize("trace", [pytest.param(t, id=name) for name, t in TRACES])
def test_the_controller_decides_every_simulate_trace_as_simulate_does(
        trace: dict[str, Any], live: Callable[[FakeClock, Policy], LiveWorld]) -> None:
    simulated = run_trace(trace)
    controlled = run_trace(trace, live)
    assert len(controlled) == len(simulated)
    for step, (sim, ctl) in enumerate(zip(simulated, controlled)):
        assert comparable(ctl) == comparable(sim), f"step {step} differs"


def test_a_preemption_skipped_for_overlapping_targets_shows_in_the_metric(
        live: Callable[[FakeClock, Policy], LiveWorld], live_worlds: list[LiveWorld]) -> None:
    """Kueue's admission_cycle_preemption_skips: heads per ClusterQueue whose preemption the last
    cycle skipped because another head took the same victims."""
    (trace,) = [t for name, t in TRACES if name == "two preemptors in one cycle never share a victim"]
    run_trace({**trace, "steps": trace["steps"][:1]}, live)
    body = live_worlds[0].loop.metrics.exposition().decode()
    assert 'batchgate_admission_cycle_preemption_skips{cluster_queue="cq-a"} 1.0' in body
    assert 'batchgate_admission_cycle_preemption_skips{cluster_queue="cq-b"} 0.0' in body
