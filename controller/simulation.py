"""`batchgate simulate`: the real admission decisions over a trace, on a FakeClock (docs/simulate.md).

The simulation feeds objects into the quota state (`QuotaState.observe`, as the controller's
watch does) and runs `admission_cycle`, the controller's own cycle and its effects on the state.
What it adds is the world around the controller: a victim's job stops, and its quota is
released, before the next cycle.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from batchgate.api.kueue import FieldError
from batchgate.api.kueue_fields import timestamp
from batchgate.api.objects import metadata
from batchgate.clock import FakeClock
from batchgate.durations import DurationError, parse_duration
from controller.decisions.quota.cycle import Effects, admission_cycle
from batchgate.policy import DEFAULT_POLICY, Policy, policy_from_value
from controller.decisions.quota.kueue_metrics import ClusterQueueFigures, cluster_queue_figures
from controller.state.cache import ObjectKey
from controller.state.quota_state import QUOTA_KINDS, QuotaState, workload_key

MAX_CYCLES_PER_STEP = 100_000
POLICY_KEYS = ("fairSharing", "admission")  # the policy sections a trace may set
KIND_ORDER = QUOTA_KINDS


class TraceError(ValueError):
    """A trace that cannot be run; the message names the step and the field."""


@dataclass(frozen=True)
class Mark:
    """An admission or preemption as the plot marks it: on the ClusterQueue whose usage it changed."""

    kind: str  # ADMISSION | PREEMPTION
    workload: ObjectKey
    cluster_queue: str


ADMISSION, PREEMPTION = "admission", "preemption"


@dataclass
class StepReport:
    admitted: list[dict[str, Any]] = field(default_factory=list)
    preempted: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # For `--plot`, not in the JSON: the simulated time at the end of the step, every
    # ClusterQueue's figures then (usage and quota per flavor and resource), and the step's marks.
    time: _dt.datetime | None = None
    queues: list[ClusterQueueFigures] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"admitted": self.admitted, "preempted": self.preempted, "pending": self.pending,
                "counts": self.counts}


class Simulation:
    """The quota state plus the world's reactions to decisions, driven by a FakeClock."""

    def __init__(self, clock: FakeClock, policy: Policy = DEFAULT_POLICY) -> None:
        self.clock = clock
        self.state = QuotaState(fair_sharing=policy.fair_sharing, requeue_batch=policy.admission.requeue_batch_period,
                                equivalence_hashing=policy.admission.scheduling_equivalence_hashing)
        self.evicting: list[ObjectKey] = []  # evicted by the last cycle; their pods stop before the next
        self.cycles = 0
        self.preemptions = 0
        self._report = StepReport()
        self._changed = False  # did the last cycle change anything another cycle could build on

    # --- inputs ------------------------------------------------------------------------------
    def apply(self, raw: Mapping[str, Any], *, created: _dt.datetime | None = None) -> None:
        self.state.observe(raw, created or self.clock.now())

    def delete(self, key: str) -> None:
        self.state.forget(self._known(key))

    def finish(self, key: str) -> None:
        self.state.finish(self._known(key))

    def _known(self, key: str) -> ObjectKey:
        """The Workload a trace names as `namespace/name`."""
        namespace, _, name = key.partition("/")
        workload = workload_key(namespace, name)
        if workload not in self.state.workloads:
            raise FieldError(key, "no such Workload (expected namespace/name)")
        return workload

    # --- cycles ------------------------------------------------------------------------------
    def cycle(self) -> Effects:
        """Complete the evictions the last cycle started, then run one cycle."""
        for key in self.evicting:
            if key in self.state.admitted:
                self.state.release(key, requeue=True)
        self.state.requeue_due(self.clock.now())
        effects = admission_cycle(self.state, self.clock.now())
        self.cycles += 1
        for admission in effects.admitted:
            admit = admission.admit
            self._report.admitted.append({"name": admit.workload.namespaced_name, "clusterQueue": admit.cluster_queue,
                                          "flavors": {ps: dict(sorted(fl.items()))
                                                      for ps, fl in admit.assignment.flavors.items()}})
            self._report.marks.append(Mark(ADMISSION, admit.workload, admit.cluster_queue))
        for preemption in effects.preempted:
            self.preemptions += 1
            self._report.marks.append(Mark(PREEMPTION, preemption.target.workload, preemption.target.cluster_queue))
            self._report.preempted.append({"name": preemption.target.workload.namespaced_name,
                                           "reason": preemption.target.reason,
                                           "by": preemption.preemptor.namespaced_name})
        self.evicting = [p.target.workload for p in effects.preempted] + [d.workload for d in effects.drained]
        self._changed = effects.changed
        return effects

    def run(self, cycles: int | None) -> None:
        """`cycles` cycles, or (None) until a cycle changes nothing."""
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
        for key in sorted((k for k in state.workloads if state.is_pending(k)), key=lambda k: k.namespaced_name):
            queue, reason = state.pending_reason(key)
            active += queue == "active"
            inadmissible += queue == "inadmissible"
            report.pending.append({"name": key.namespaced_name, "queue": queue, "reason": reason})
        evicted = sum(1 for held in state.admitted.values() if held.evicted)
        report.counts = {"pendingActive": active, "pendingInadmissible": inadmissible,
                         "reserving": len(state.admitted), "admitted": len(state.admitted) - evicted}
        report.time = self.clock.now()
        report.queues = [cluster_queue_figures(state, name) for name in sorted(state.cluster_queues)]
        return report


# --- traces ------------------------------------------------------------------------------------
class World(Protocol):
    """What a trace drives: the simulation, or (in the tests) the controller's admission loop."""

    clock: FakeClock

    def apply(self, raw: Mapping[str, Any], *, created: _dt.datetime | None = None) -> None: ...
    def delete(self, key: str) -> None: ...
    def finish(self, key: str) -> None: ...
    def run(self, cycles: int | None) -> None: ...
    def take_report(self) -> StepReport: ...


def run_trace(trace: Any, world: Callable[[FakeClock, Policy], World] = Simulation) -> list[StepReport]:
    """Run a parsed YAML trace in `world`; raise TraceError naming the step and field on bad input."""
    if not isinstance(trace, Mapping):
        raise TraceError("trace: must be a mapping with `objects` and `steps`")
    unknown = set(trace) - {"objects", "steps", *POLICY_KEYS}
    if unknown:
        raise TraceError(f"trace: unknown keys {sorted(unknown)}; expected objects, steps, {', '.join(POLICY_KEYS)}")
    objects = _list(trace.get("objects"), "objects")
    steps = _list(trace.get("steps"), "steps")
    running = world(FakeClock(_latest_timestamp(trace) or FakeClock().now()), _policy(trace))
    _apply_all(running, objects, "objects")
    reports = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        if not isinstance(step, Mapping):
            raise TraceError(f"{where}: must be a mapping")
        unknown = set(step) - {"apply", "delete", "finish", "advance", "cycles"}
        if unknown:
            raise TraceError(f"{where}: unknown keys {sorted(unknown)}; expected apply, delete, finish, advance, cycles")
        _apply_all(running, _list(step.get("apply"), f"{where}.apply"), f"{where}.apply")
        for verb in ("delete", "finish"):
            for j, key in enumerate(_list(step.get(verb), f"{where}.{verb}")):
                try:
                    getattr(running, verb)(key if isinstance(key, str) else repr(key))
                except FieldError as exc:
                    raise TraceError(f"{where}.{verb}[{j}]: {exc.detail}: {key!r}") from None
        if step.get("advance") is not None:
            try:
                running.clock.advance(parse_duration(step["advance"]))
            except (DurationError, ValueError) as exc:
                raise TraceError(f"{where}.advance: {exc}") from None
        running.run(_cycles(step.get("cycles", "until-idle"), f"{where}.cycles"))
        reports.append(running.take_report())
    return reports


def _apply_all(running: World, objects: list[Any], where: str) -> None:
    indexed = list(enumerate(objects))
    for i, raw in indexed:
        if not isinstance(raw, Mapping):
            raise TraceError(f"{where}[{i}]: must be a Kubernetes object (a mapping)")
    rank = {kind: n for n, kind in enumerate(KIND_ORDER)}
    indexed.sort(key=lambda item: rank.get(item[1].get("kind"), -1) if isinstance(item[1].get("kind"), str) else -1)
    start = running.clock.now()
    for n, (i, raw) in enumerate(indexed):
        try:
            running.apply(raw, created=start + _dt.timedelta(microseconds=n))
        except FieldError as exc:
            name = metadata(raw).get("name") if isinstance(raw.get("metadata"), Mapping) else None
            label = f" ({raw.get('kind')} {name})" if name else ""
            raise TraceError(f"{where}[{i}]{label}: {exc}") from None


def _policy(trace: Mapping[str, Any]) -> Policy:
    """The controller's configuration a trace may set, read as the policy's sections of the same
    names: `fairSharing` (Kueue's block `{enable, preemptionStrategies}`, plus `preemptWithinNominal`,
    Kueue v0.17's feature gate) and `admission` (`requeueBatchPeriod`, `schedulingEquivalenceHashing`)."""
    try:
        return policy_from_value({key: trace[key] for key in POLICY_KEYS if trace.get(key) is not None})
    except FieldError as exc:
        raise TraceError(str(exc)) from None


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
        meta, status = (value if isinstance(value := raw.get(part), Mapping) else {} for part in ("metadata", "status"))
        stamps = [meta.get("creationTimestamp")]
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

