"""`batchgate simulate`: the real admission decisions over a trace, on a FakeClock (DESIGN 10).

The simulation plays the controller's part around the pure cycle: it feeds objects into the
quota state, runs `run_cycle`, assumes admissions, marks victims evicted, and completes their
eviction (quota released, workload requeued) before the next cycle, as a job that stops would.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from batchgate.api.kueue import (
    ClusterQueue, FieldError, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass,
    validate_cluster_queue,
)
from batchgate.api.kueue_fields import string_map, timestamp
from batchgate.clock import FakeClock
from batchgate.durations import DurationError, parse_duration
from controller.decisions.quota.outcomes import CycleResult
from controller.decisions.quota.admission import run_cycle
from controller.decisions.quota.stop_policy import drain_evictions
from controller.state.quota_state import STRATEGIES, FairSharing, QuotaState

MAX_CYCLES_PER_STEP = 100_000
KIND_ORDER = ("Namespace", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Workload")


class TraceError(ValueError):
    """A trace that cannot be run; the message names the step and the field."""


@dataclass
class StepReport:
    admitted: list[dict[str, Any]] = field(default_factory=list)
    preempted: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"admitted": self.admitted, "preempted": self.preempted, "pending": self.pending,
                "counts": self.counts}


class Simulation:
    """The quota state plus the controller's reactions to decisions, driven by a FakeClock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.state = QuotaState()
        self.evicting: list[str] = []  # evicted by us; their pods stop before the next cycle
        self.cycles = 0
        self.preemptions = 0
        self._report = StepReport()
        self._changed = False  # did the last cycle change anything another cycle could build on

    # --- inputs ------------------------------------------------------------------------------
    def apply(self, raw: Mapping[str, Any], *, created: _dt.datetime | None = None) -> None:
        kind = raw.get("kind")
        if kind == "Namespace":
            meta = raw.get("metadata") or {}
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str) or not name:
                raise FieldError("metadata.name", "is required")
            self.state.put_namespace(name, string_map(meta.get("labels"), "metadata.labels"))
        elif kind == "ResourceFlavor":
            self.state.put_flavor(ResourceFlavor.from_dict(raw))
        elif kind == "WorkloadPriorityClass":
            self.state.put_priority_class(WorkloadPriorityClass.from_dict(raw))
        elif kind == "ClusterQueue":
            cq = ClusterQueue.from_dict(raw)
            errors = validate_cluster_queue(cq)
            if errors:
                raise errors[0]
            self.state.put_cluster_queue(cq)
        elif kind == "LocalQueue":
            self.state.put_local_queue(LocalQueue.from_dict(raw))
        elif kind == "Workload":
            wl = Workload.from_dict(raw)
            if wl.creation_timestamp is None:
                wl = _with_creation(wl, created or self.clock.now())
            self.state.put_workload(wl)
        else:
            raise FieldError("kind", f"must be one of {', '.join(KIND_ORDER)}, got {kind!r}")

    def delete(self, key: str) -> None:
        self._known(key)
        self.state.forget(key)

    def finish(self, key: str) -> None:
        self._known(key)
        self.state.finish(key)

    def _known(self, key: str) -> None:
        if key not in self.state.workloads:
            raise FieldError(key, "no such Workload (expected namespace/name)")

    # --- cycles ------------------------------------------------------------------------------
    def drain(self) -> None:
        for evict in drain_evictions(self.state):
            if self.state.mark_evicted(evict.workload):
                self.evicting.append(evict.workload)

    def cycle(self) -> CycleResult:
        """Complete outstanding evictions, run one cycle, and act on its decisions."""
        for key in self.evicting:
            if key in self.state.admitted:
                self.state.release(key, requeue=True)
        self.evicting = []
        now = self.clock.now()
        heads = self.state.pending.heads(lambda cq: self.state.inactive_reason(cq) is None)
        result = run_cycle(self.state, heads, now)
        self.cycles += 1
        for admit in result.admit:
            self.state.assume(admit.workload, admit.cluster_queue, admit.assignment.usage,
                              admit.assignment.flavors, now)
            self._report.admitted.append({"name": admit.workload, "clusterQueue": admit.cluster_queue,
                                          "flavors": {ps: dict(sorted(fl.items()))
                                                      for ps, fl in admit.assignment.flavors.items()}})
        for preempt in result.preempt:
            for target in preempt.targets:
                if self.state.mark_evicted(target.workload):
                    self.evicting.append(target.workload)
                    self.preemptions += 1
                    self._report.preempted.append({"name": target.workload, "reason": target.reason,
                                                   "by": preempt.preemptor})
        resumed = 0  # workloads that will try later flavors next cycle: another cycle may differ
        for key, progress in result.flavor_progress.items():
            resumed += progress is not None and any(i >= 0 for tried in progress.tried for i in tried.values())
            self.state.set_progress(key, progress)
        parked = 0
        for requeue in result.requeue:
            before = self.state.pending.state_of(requeue.workload)
            self.state.requeue(requeue.workload, requeue.queue, requeue.reason)
            parked += before == "active" and requeue.queue == "inadmissible"
        self._changed = bool(result.admit or self.evicting or parked or resumed)
        return result

    def run(self, cycles: int | None) -> None:
        """`cycles` cycles, or (None) until a cycle changes nothing."""
        self.drain()
        if cycles is not None:
            for _ in range(cycles):
                self.cycle()
            return
        for _ in range(MAX_CYCLES_PER_STEP):
            pending_evictions = bool(self.evicting)
            self.cycle()
            if not (self._changed or pending_evictions):
                return
        raise TraceError(f"admission did not settle within {MAX_CYCLES_PER_STEP} cycles")

    # --- output ------------------------------------------------------------------------------
    def take_report(self) -> StepReport:
        report, self._report = self._report, StepReport()
        state = self.state
        active = inadmissible = 0
        for key in sorted(k for k in state.workloads if state.is_pending(k)):
            queue, reason = self.pending_reason(key)
            active += queue == "active"
            inadmissible += queue == "inadmissible"
            report.pending.append({"name": key, "queue": queue, "reason": reason})
        evicted = sum(1 for held in state.admitted.values() if held.evicted)
        report.counts = {"pendingActive": active, "pendingInadmissible": inadmissible,
                         "reserving": len(state.admitted), "admitted": len(state.admitted) - evicted}
        return report

    def pending_reason(self, key: str) -> tuple[str, str]:
        state = self.state
        if key in state.blocked:
            return "inadmissible", state.blocked[key]
        queue = state.pending.state_of(key) or "inadmissible"
        cq = state.cluster_queue_of(key)
        inactive = state.inactive_reason(cq) if cq else None
        return queue, inactive or state.messages.get(key, "")


def _with_creation(wl: Workload, created: _dt.datetime) -> Workload:
    return replace(wl, creation_timestamp=created)


# --- traces ------------------------------------------------------------------------------------
def run_trace(trace: Any) -> list[StepReport]:
    """Run a parsed YAML trace; raise TraceError naming the step and field on bad input."""
    if not isinstance(trace, Mapping):
        raise TraceError("trace: must be a mapping with `objects` and `steps`")
    unknown = set(trace) - {"objects", "steps", "fairSharing"}
    if unknown:
        raise TraceError(f"trace: unknown keys {sorted(unknown)}; expected objects, steps, fairSharing")
    objects = _list(trace.get("objects"), "objects")
    steps = _list(trace.get("steps"), "steps")
    sim = Simulation(FakeClock(_latest_timestamp(trace) or FakeClock().now()))
    sim.state.fair_sharing = _fair_sharing(trace.get("fairSharing"))
    _apply_all(sim, objects, "objects")
    reports = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        if not isinstance(step, Mapping):
            raise TraceError(f"{where}: must be a mapping")
        unknown = set(step) - {"apply", "delete", "finish", "advance", "cycles"}
        if unknown:
            raise TraceError(f"{where}: unknown keys {sorted(unknown)}; expected apply, delete, finish, advance, cycles")
        _apply_all(sim, _list(step.get("apply"), f"{where}.apply"), f"{where}.apply")
        for verb in ("delete", "finish"):
            for j, key in enumerate(_list(step.get(verb), f"{where}.{verb}")):
                try:
                    getattr(sim, verb)(key if isinstance(key, str) else repr(key))
                except FieldError as exc:
                    raise TraceError(f"{where}.{verb}[{j}]: {exc.detail}: {key!r}") from None
        if step.get("advance") is not None:
            try:
                sim.clock.advance(parse_duration(step["advance"]))
            except (DurationError, ValueError) as exc:
                raise TraceError(f"{where}.advance: {exc}") from None
        sim.run(_cycles(step.get("cycles", "until-idle"), f"{where}.cycles"))
        reports.append(sim.take_report())
    return reports


def _apply_all(sim: Simulation, objects: list[Any], where: str) -> None:
    indexed = list(enumerate(objects))
    for i, raw in indexed:
        if not isinstance(raw, Mapping):
            raise TraceError(f"{where}[{i}]: must be a Kubernetes object (a mapping)")
    rank = {kind: n for n, kind in enumerate(KIND_ORDER)}
    indexed.sort(key=lambda item: rank.get(item[1].get("kind"), -1) if isinstance(item[1].get("kind"), str) else -1)
    start = sim.clock.now()
    for n, (i, raw) in enumerate(indexed):
        try:
            sim.apply(raw, created=start + _dt.timedelta(microseconds=n))
        except FieldError as exc:
            name = (raw.get("metadata") or {}).get("name") if isinstance(raw.get("metadata"), Mapping) else None
            label = f" ({raw.get('kind')} {name})" if name else ""
            raise TraceError(f"{where}[{i}]{label}: {exc}") from None


def _fair_sharing(raw: Any) -> FairSharing:
    """Kueue's configuration block `fairSharing: {enable, preemptionStrategies}`."""
    if raw is None:
        return FairSharing()
    if not isinstance(raw, Mapping) or set(raw) - {"enable", "preemptionStrategies"}:
        raise TraceError("fairSharing: must be a mapping with enable and optionally preemptionStrategies")
    enable = raw.get("enable", False)
    if not isinstance(enable, bool):
        raise TraceError(f"fairSharing.enable: must be true or false, got {enable!r}")
    strategies = _list(raw.get("preemptionStrategies"), "fairSharing.preemptionStrategies") or list(STRATEGIES)
    for i, name in enumerate(strategies):
        if name not in STRATEGIES:
            raise TraceError(f"fairSharing.preemptionStrategies[{i}]: must be one of {', '.join(STRATEGIES)}")
    return FairSharing(enable, tuple(strategies))


def _list(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TraceError(f"{where}: must be a list")
    return raw


def _cycles(raw: Any, where: str) -> int | None:
    if raw == "until-idle":
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise TraceError(f"{where}: must be a non-negative integer or until-idle, got {raw!r}")
    return raw


def _latest_timestamp(trace: Mapping[str, Any]) -> _dt.datetime | None:
    latest = None
    objects = list(_lenient_list(trace.get("objects")))
    for step in _lenient_list(trace.get("steps")):
        if isinstance(step, Mapping):
            objects += _lenient_list(step.get("apply"))
    for raw in objects:
        if not isinstance(raw, Mapping):
            continue
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
        stamps = [meta.get("creationTimestamp")]
        status = raw.get("status") if isinstance(raw.get("status"), Mapping) else {}
        for cond in _lenient_list(status.get("conditions")):
            if isinstance(cond, Mapping):
                stamps.append(cond.get("lastTransitionTime"))
        for stamp in stamps:
            try:
                value = timestamp(stamp, "")
            except FieldError:
                continue  # reported with its field path when the object is applied
            if value is not None and (latest is None or value > latest):
                latest = value
    return latest


def _lenient_list(raw: Any) -> list[Any]:
    """For the clock-start scan only: malformed parts are reported when the objects are applied."""
    return raw if isinstance(raw, list) else []


def format_table(reports: list[StepReport]) -> str:
    """The same facts as `-o json`, for people."""
    lines = []
    for i, report in enumerate(reports):
        c = report.counts
        lines.append(f"step {i}: admitted {len(report.admitted)}, preempted {len(report.preempted)}, "
                     f"pending {c['pendingActive']} active / {c['pendingInadmissible']} inadmissible, "
                     f"reserving {c['reserving']}, admitted total {c['admitted']}")
        for a in report.admitted:
            flavors = "; ".join(f"{ps}: " + ", ".join(f"{r}={f}" for r, f in fl.items())
                                for ps, fl in a["flavors"].items())
            lines.append(f"  ADMITTED   {a['name']:<28} {a['clusterQueue']:<16} {flavors}")
        for p in report.preempted:
            lines.append(f"  PREEMPTED  {p['name']:<28} {p['reason']:<16} by {p['by']}")
        for p in report.pending:
            lines.append(f"  PENDING    {p['name']:<28} {p['queue']:<16} {p['reason']}")
    return "\n".join(lines)

