"""The admission loop: the quota admission cycle (`decisions/quota/cycle.py`) run against the cluster.

Changes from the informers feed the quota state (`QuotaState.observe`, under this loop's lock).
A cycle is `admission_cycle` — the same code `batchgate simulate` runs: it takes the heads,
decides, and records the outcome in the state (each admission *assumed* at once, so the next
cycle cannot hand the same quota out again; victims marked Evicted; flavor progress kept). This
loop only orchestrates: watch events in, cycles, the returned Effects out as writes to the
Workloads' `/status`; an admission whose write fails is forgotten (its quota released, the
workload queued again). A wake-up finds nothing to do while the state is settled
(`QuotaState.settled`: no change since a cycle that changed nothing), so echoes of the loop's own
writes and ticks cost no cycle. Which events of an admission in flight are held back is
`controller/state/assumed_admissions.py`; which pending reasons are due is
`controller/state/pending_reasons.py`; the loop's lock guards both and the quota state. Victims
keep their quota until their job is stopped and its pods are gone (the job integration then
clears the admission); a Workload without an owner has no pods to wait for, so its quota is
released here with the write that evicts it, or when its eviction is observed.
"""

from __future__ import annotations

import datetime as _dt
import logging
import operator
from functools import partial
import threading
from dataclasses import dataclass
from typing import Callable, Mapping

from batchgate import keys
from batchgate.api.conditions import condition_of, is_true
from batchgate.api.kueue_fields import FieldError
from batchgate.clock import Clock
from batchgate.policy import Policy
from controller.adapters.cycle_loop import CycleLoop
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES, ApiError
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.queue_status import Statuses, wanted_statuses
from controller.adapters.store import SharedStore
from controller.adapters.write_pool import WritePool
from controller.adapters.writer import NotLeader, PatchFn, Writer
from batchgate.api.objects import controller_owner
from controller.decisions.quota import admission_status as status
from controller.decisions.quota import kueue_metrics
from controller.decisions.quota.cycle import Admission, Effects, Preemption, admission_cycle
from controller.decisions.quota.outcomes import Evict
from controller.state.assumed_admissions import AssumedAdmissions
from controller.state.cache import Change, Obj, ObjectKey, revision
from controller.state.pending_reasons import PendingReasons
from controller.state.quota_state import QUOTA_KINDS, QuotaState

log = logging.getLogger(__name__)
WORKLOADS = RESOURCES["Workload"]
URGENT = float("-inf")  # evictions and releases go first: a preemptor is waiting for them
BACKOFF = (0.001, 0.1)  # Kueue's scheduler: after a cycle admitting nothing, 1 ms doubling to 100 ms


def next_backoff(previous: float, admitted: bool) -> float:
    """The pause before the next cycle: none after an admission, else `BACKOFF` doubling."""
    return 0.0 if admitted else min(BACKOFF[1], max(BACKOFF[0], 2 * previous))


@dataclass(frozen=True)
class CycleFigures:
    """What a cycle's metrics read of the quota state, taken under the lock with the cycle."""

    cluster_queues: tuple[str, ...]
    preemptions: Mapping[tuple[str, str], int]  # (preempting ClusterQueue, reason) -> count
    drained: tuple[tuple[Evict, str], ...]  # each drained workload with its ClusterQueue


class AdmissionLoop:
    def __init__(self, store: SharedStore, writer: Writer, recorder: EventRecorder, clock: Clock,
                 metrics: ControllerMetrics, is_leader: Callable[[], bool], *, tick: float = 1.0,
                 status_interval: float = 1.0, spare_capacity: Callable[[], float] = lambda: float("inf"),
                 reserve: float = 0.0, writers: int = 8) -> None:
        self.store, self.writer, self.recorder, self.clock = store, writer, recorder, clock
        self.metrics, self.is_leader = metrics, is_leader
        self.state = QuotaState()
        self.cycles = 0
        self._lock = threading.RLock()  # guards the state, the assumed admissions and the reasons
        self.assumed = AssumedAdmissions()
        # Reasons (and queue status, `QueueStatusReconciler`) are informative: they are flushed at most
        # every `status_interval` and only from the rate limiter's spare capacity (`has_spare`), so they
        # never delay an admission.
        self.reasons = PendingReasons()
        self.spare_capacity, self.reserve = spare_capacity, reserve
        self._bad: set[ObjectKey] = set()  # objects whose invalid field was already told once
        self._figures_shown: list[kueue_metrics.ClusterQueueFigures] = []  # the gauges' last figures
        self._no_skips_shown: tuple[str, ...] | None = None  # the queues whose skip gauges last showed 0
        self.writes = WritePool("admission-write", writers)
        self._backoff = 0.0  # the pause after the last cycle; none after an admission
        self._loop = CycleLoop("admission", self.cycle, is_leader, wait=partial(self.seconds_to_next_cycle, tick))
        self._flusher = CycleLoop("status-flush", self._flush, is_leader, wait=lambda: status_interval)

    # --- inputs ------------------------------------------------------------------------------
    def on_change(self, change: Change) -> None:
        key, obj = change.key, change.new
        if key.kind not in QUOTA_KINDS:
            return
        changed = True
        try:
            with self._lock:
                if obj is None:
                    self._remove(key)
                elif key.kind == "Workload" and self.assumed.hold_back(key, obj):
                    return
                else:
                    changed = self.state.observe(obj, self.clock.now())
                    if key.kind != "Workload":
                        if changed:
                            self.reasons.mark_everything()
                    elif self.state.is_pending(key):
                        self.reasons.mark((key,))
                    else:
                        self._release_if_ownerless(key, obj)
            self._bad.discard(key)
        except FieldError as exc:
            if key not in self._bad and obj is not None:
                self._bad.add(key)
                log.warning("%s: %s", key, exc)
                self.recorder.warning(obj, "InvalidObject", f"{exc}")
        if changed:  # an echo of our own write, or a resync, gives a cycle nothing new
            self.wake()

    def _admission_written(self, key: ObjectKey, written: int | None) -> None:
        """Under the lock: the admission write of `key` ended (`written`: the revision it made, None
        if it failed); an event held back that the state must take after all is fed to it now."""
        late = self.assumed.written(key, written)
        if late is not None:
            try:
                self.state.observe(late, self.clock.now())
            except FieldError as exc:
                log.warning("Workload %s: %s", key, exc)

    def _remove(self, key: ObjectKey) -> None:
        if key.kind == "Workload":
            self.assumed.forget(key)
            self.state.forget(key)
        elif key.kind == "ClusterQueue":
            log.warning("ClusterQueue %s deleted: its workloads stay pending until it returns", key.name)

    # --- the loop ----------------------------------------------------------------------------
    def start(self) -> None:
        self.writes.start()
        self._loop.start()
        self._flusher.start()

    def stop(self) -> None:
        self._loop.stop()
        self._flusher.stop()
        self.writes.stop()

    def wake(self) -> None:
        self._loop.wake()

    def seconds_to_next_cycle(self, tick: float) -> float:
        """Seconds until the next cycle is due without an event: a tick, or the end of a requeue period."""
        with self._lock:
            due = self.state.next_requeue
        return tick if due is None else max(0.0, min(tick, (due - self.clock.now()).total_seconds()))

    def apply_policy(self, policy: Policy) -> None:
        """Fair sharing, the requeue batch and equivalence hashing are the policy's to switch; a
        change takes effect from the next cycle."""
        wanted, batch = policy.fair_sharing, policy.admission.requeue_batch_period
        hashing = policy.admission.scheduling_equivalence_hashing
        with self._lock:
            if (self.state.fair_sharing, self.state.requeue_batch, self.state.equivalence_hashing) == (
                    wanted, batch, hashing):
                return
            if self.state.fair_sharing != wanted:
                log.info("fair sharing %s", "on" if wanted.enable else "off")
            if self.state.requeue_batch != batch:
                log.info("parked workloads asked back %s", f"at most every {batch}" if batch else "at once")
            if self.state.equivalence_hashing != hashing:
                log.info("scheduling equivalence hashing %s", "on" if hashing else "off")
            self.state.fair_sharing = wanted
            self.state.set_requeue_batch(batch)
            self.state.set_equivalence_hashing(hashing)
        self.wake()

    def cycle(self) -> bool:
        """One cycle: decide and apply under the lock, then write. Returns whether another cycle
        could decide differently (something was admitted, evicted, parked or left flavors to try)."""
        now = self.clock.now()
        started = self.clock.monotonic()
        with self._lock:
            self.state.requeue_due(now)
            if self.state.settled:
                return False
            effects = admission_cycle(self.state, now)
            for admission in effects.admitted:
                self.assumed.assume(admission.admit.workload)
            self.reasons.mark(effects.requeued)
            self.cycles += 1
            figures = self._figures(effects)
        took = self.clock.monotonic() - started
        self._backoff = next_backoff(self._backoff, bool(effects.admitted))
        if self._backoff:
            self._loop.hold_off(self._backoff)
        self._show_cycle(effects, figures, took)
        self._carry_out(effects, now)
        return effects.changed

    def _figures(self, effects: Effects) -> CycleFigures:
        """Under the lock: what the cycle's metrics read of the state."""
        return CycleFigures(tuple(self.state.cluster_queues),
                            kueue_metrics.preemptions(self.state, effects) if self.metrics.kueue else {},
                            tuple((evict, self.state.admitted[evict.workload].cluster_queue) for evict in effects.drained))

    def _show_cycle(self, effects: Effects, figures: CycleFigures, took: float) -> None:
        self.metrics.cycle_duration.observe(took)
        kueue = self.metrics.kueue  # None with --no-kueue-metrics
        if kueue is not None and (result := kueue_metrics.attempt_result(effects)) is not None:
            kueue.attempt(result, took)
        skips = effects.skipped_preemptions
        if skips or figures.cluster_queues != self._no_skips_shown:  # most cycles skip none, as the last
            self.metrics.show_preemption_skips({(name,): float(skips.get(name, 0)) for name in figures.cluster_queues})
            self._no_skips_shown = None if skips else figures.cluster_queues
        if kueue is not None:
            for (preempting, reason), count in figures.preemptions.items():
                kueue.preempted.labels(preempting, reason).inc(count)
        for preemption in effects.preempted:
            self.metrics.evicted(preemption.target.cluster_queue, keys.EVICTED_BY_PREEMPTION)
        for evict, cluster_queue in figures.drained:
            self.metrics.evicted(cluster_queue, evict.reason)

    def _carry_out(self, effects: Effects, now: _dt.datetime) -> None:
        # Writes run later on the pool: each is bound to its own values with partial, not a loop variable.
        for admission in effects.admitted:
            self.writes.submit(admission.admit.workload, -admission.info.priority,
                               partial(self._write_admission, admission, now))
        for preemption in effects.preempted:
            self.writes.submit(preemption.target.workload, URGENT, partial(self._write_preemption, preemption, now))
        for evict in effects.drained:
            self.writes.submit(evict.workload, URGENT, partial(self._write_drain, evict, now))

    def _write_preemption(self, preemption: Preemption, now: _dt.datetime) -> None:
        target = preemption.target
        self._write(target.workload, lambda wl: status.released_at_once(
            wl, status.preemption_patch(wl, target, preemption.preemptor_uid, now), now),
            ("Normal", "Preempted", keys.COND_PREEMPTED))

    def _write_drain(self, evict: Evict, now: _dt.datetime) -> None:
        self._write(evict.workload, lambda wl: status.released_at_once(wl, status.stop_eviction_patch(wl, evict, now), now),
                    ("Normal", "Evicted", keys.COND_EVICTED))

    def _write_release(self, key: ObjectKey, now: _dt.datetime) -> None:
        self._write(key, lambda wl: status.release_patch(wl, now), ("Normal", "QuotaReleased", keys.COND_QUOTA_RESERVED))

    def _flush(self) -> bool:
        self.show_metrics()
        self.write_reasons(self.clock.now())
        return False

    def has_spare(self) -> bool:
        """Whether the rate limiter can spare a request for status (keeping `reserve` for admissions)."""
        return self.spare_capacity() >= max(1.0, self.reserve)

    def queue_statuses(self) -> Statuses:
        """What the queues' status should say, read under the lock (for `QueueStatusReconciler`)."""
        with self._lock:
            return wanted_statuses(self.state)

    def show_metrics(self) -> None:
        """The per-ClusterQueue gauges, from the state as it is now (every status interval)."""
        with self._lock:
            state = self.state
            figures = [state.queue_views.one(("figures", name), state.queue_version(name),
                                             partial(kueue_metrics.cluster_queue_figures, state, name))
                       for name in state.cluster_queues]
        if len(figures) == len(self._figures_shown) and all(map(operator.is_, figures, self._figures_shown)):
            return  # recalled, every one: nothing to show anew
        self.metrics.show_cluster_queues(figures)
        self._figures_shown = figures

    def write_reasons(self, now: _dt.datetime) -> None:
        """The pending reasons that changed, from the limiter's spare capacity only."""
        with self._lock:
            self.reasons.note(self.state)
        while self.has_spare():
            with self._lock:
                due = self.reasons.next_due(self.state)
            if due is None:
                return
            key, message = due
            self._write(key, partial(_pending_patch, message, now), ("Warning", "Pending", keys.COND_QUOTA_RESERVED))

    # --- writes ------------------------------------------------------------------------------
    def _observed(self, key: ObjectKey) -> Obj | None:
        return self.store.get(key.kind, key.namespace, key.name)

    def _write(self, key: ObjectKey, compute: PatchFn, event: tuple[str, str, str]) -> bool:
        """Patch a Workload's status; record `event` = (type, reason, condition whose message it tells)."""
        observed = self._observed(key)
        if observed is None:
            return False
        try:
            written = self.writer.update_status(WORKLOADS, observed, compute)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        if written is not None:
            self.store.assume("Workload", written)
            type_, reason, told_by = event
            self.recorder.record(written, type_, reason, told.message if (told := condition_of(written, told_by)) else "")
        return True

    def _write_admission(self, admission: Admission, now: _dt.datetime) -> None:
        admit = admission.admit
        with self._lock:
            held = self.state.admitted.get(admit.workload)
            if held is not None and held.evicted:
                # Preempted before its admission reached the API: it never held quota there.
                self.state.release(admit.workload, requeue=True)
                self._admission_written(admit.workload, None)
                self.wake()
                return
        observed = self._observed(admit.workload)
        try:
            ok = self._write(admit.workload, lambda wl: status.admission_patch(wl, admit, admission.info, now),
                             ("Normal", "QuotaReserved", keys.COND_QUOTA_RESERVED))
        except NotLeader:
            ok = False
        except Exception as exc:
            log.warning("admitting %s failed: %s", admit.workload, exc)
            ok = False
        if not ok:
            with self._lock:  # forget the assumption: the quota goes back, the workload waits again
                if admit.workload in self.state.workloads:
                    self.state.release(admit.workload, requeue=True, retry=True)
                self._admission_written(admit.workload, None)
            self.wake()
            return
        with self._lock:
            self._admission_written(admit.workload, revision(self._observed(admit.workload)))
        self.metrics.admitted.labels(admit.cluster_queue).inc()
        if self.metrics.kueue is None:
            return
        try:
            waited = kueue_metrics.queued_wait_seconds(observed or {}, now)
        except ValueError as exc:  # a creationTimestamp that is not a time
            log.debug("wait time of %s: %s", admit.workload, exc)
            return
        self.metrics.kueue.reserved_and_admitted(admit.cluster_queue, waited)

    def _release_if_ownerless(self, key: ObjectKey, observed: Obj) -> None:
        """Under the lock: a victim without an owner, its eviction on the API, has no pods to wait
        for: its release is written now (a release already written makes no second write)."""
        held = self.state.admitted.get(key)
        if (held is not None and held.evicted and controller_owner(observed) is None
                and is_true(observed, keys.COND_EVICTED) and (observed.get("status") or {}).get("admission")):
            self.writes.submit(key, URGENT, partial(self._write_release, key, self.clock.now()))


def _pending_patch(message: str, now: _dt.datetime, workload: Obj) -> Obj | None:
    return status.pending_patch(workload, message, now)

