"""The admission loop: Kueue's cycle (`decisions/quota_admission.run_cycle`) run against the cluster.

Changes from the informers feed the quota state (under this loop's lock). A cycle takes the
heads, decides, *assumes* each admission in the state at once — so the next cycle cannot hand
the same quota out again — and then writes the decisions to the Workloads' `/status`; an
admission whose write fails is forgotten (its quota released, the workload queued again).
Victims of preemption are marked Evicted and keep their quota until their job is stopped and
its pods are gone (the job integration then clears the admission); a Workload without an owner
has no pods to wait for, so its quota is released here at once.
"""

from __future__ import annotations

import logging
import threading
import itertools
import queue
from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api.kueue import (
    ClusterQueue, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass, validate_cluster_queue,
)
from batchgate.api.kueue_fields import FieldError
from batchgate.clock import Clock
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES, ApiError
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.store import SharedStore
from controller.adapters.writer import NotLeader, Writer
from controller.decisions.quota import admission_status as status
from controller.decisions.quota import queue_status
from controller.decisions.conditions import condition, is_true
from controller.decisions.quota.admission import run_cycle
from controller.decisions.quota.stop_policy import drain_evictions
from controller.decisions.jobs.workloads import controller_owner
from controller.state.cache import Change
from batchgate.policy import Policy
from controller.state.quota_state import FairSharing, QuotaState

log = logging.getLogger(__name__)
WORKLOADS, CLUSTER_QUEUES, LOCAL_QUEUES = RESOURCES["Workload"], RESOURCES["ClusterQueue"], RESOURCES["LocalQueue"]
URGENT = float("-inf")  # evictions and releases go first: a preemptor is waiting for them
QUOTA_KINDS = ("Namespace", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Workload")


def _valid_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueue:
    """A ClusterQueue the gateway would have let through, else FieldError (the previous version
    stays in force). Admins may write ClusterQueues past the gateway (break-glass while it is
    down, docs/webhook.md), so the controller checks again what it reads."""
    queue = ClusterQueue.from_dict(obj)
    errors = validate_cluster_queue(queue)
    if errors:
        raise FieldError("", "; ".join(str(e) for e in errors))
    return queue


class AdmissionLoop:
    def __init__(self, store: SharedStore, writer: Writer, recorder: EventRecorder, clock: Clock,
                 metrics: ControllerMetrics, is_leader: Callable[[], bool], *, tick: float = 1.0,
                 status_interval: float = 1.0, spare_capacity: Callable[[], float] = lambda: float("inf"),
                 reserve: float = 0.0, writers: int = 8) -> None:
        self.store, self.writer, self.recorder, self.clock = store, writer, recorder, clock
        self.metrics, self.is_leader, self.tick = metrics, is_leader, tick
        self.state = QuotaState()
        self.cycles = 0
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dirty: set[str] = set()  # workloads whose pending condition may need a write
        self._written_cq: dict[str, Mapping[str, Any]] = {}
        self._written_lq: dict[tuple[str, str], Mapping[str, Any]] = {}
        # Reasons and queue status are informative: they are flushed at most every `status_interval`
        # and only from the rate limiter's spare capacity, so they never delay an admission.
        self.status_interval = status_interval
        self.spare_capacity, self.reserve = spare_capacity, reserve
        self._reasons: dict[str, str] = {}
        # Decisions are written in parallel, as Kueue does: the assumption already holds the quota,
        # so the next cycle need not wait for the API.
        self._writes: queue.PriorityQueue[tuple[float, int, str, Callable[..., Any], tuple[Any, ...]]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._writer_threads = [threading.Thread(target=self._write_loop, name=f"admission-write-{i}", daemon=True)
                                for i in range(writers)]
        self._in_flight: set[str] = set()
        self._follow_ups: dict[str, list[tuple[float, int, str, Callable[..., Any], tuple[Any, ...]]]] = {}
        self._flusher: threading.Thread | None = None
        self._bad: set[tuple[str, str]] = set()

    # --- inputs ------------------------------------------------------------------------------
    def on_change(self, change: Change) -> None:
        kind = change.key.kind
        if kind not in QUOTA_KINDS:
            return
        obj = change.new
        try:
            with self._lock:
                if obj is None:
                    self._remove(change)
                else:
                    self._put(kind, obj)
            self._bad.discard((kind, str(change.key)))
        except FieldError as exc:
            if (kind, str(change.key)) not in self._bad and obj is not None:
                self._bad.add((kind, str(change.key)))
                log.warning("%s %s: %s", kind, change.key, exc)
                self.recorder.warning(obj, "InvalidObject", f"{exc}")
        self._wake.set()

    def _put(self, kind: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if kind == "Namespace":
            self.state.put_namespace(meta.get("name", ""), meta.get("labels") or {})
        elif kind == "ResourceFlavor":
            self.state.put_flavor(ResourceFlavor.from_dict(obj))
        elif kind == "WorkloadPriorityClass":
            self.state.put_priority_class(WorkloadPriorityClass.from_dict(obj))
        elif kind == "ClusterQueue":
            self.state.put_cluster_queue(_valid_cluster_queue(obj))
        elif kind == "LocalQueue":
            self.state.put_local_queue(LocalQueue.from_dict(obj))
        elif kind == "Workload":
            workload = Workload.from_dict(obj)
            self.state.put_workload(workload)
            if self.state.is_pending(workload.key):
                self._dirty.add(workload.key)

    def _remove(self, change: Change) -> None:
        if change.key.kind == "Workload":
            self.state.forget(f"{change.key.namespace}/{change.key.name}")
        elif change.key.kind == "ClusterQueue":
            log.warning("ClusterQueue %s deleted: its workloads stay pending until it returns", change.key.name)

    # --- the loop ----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="admission", daemon=True)
        self._thread.start()
        self._flusher = threading.Thread(target=self._flush_loop, name="status-flush", daemon=True)
        self._flusher.start()
        for thread in self._writer_threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for thread in (self._thread, self._flusher, *self._writer_threads):
            if thread is not None and thread.is_alive():
                thread.join(timeout=10)

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.status_interval):
            if not self.is_leader():
                continue
            try:
                self._flush_status(self.clock.now())
            except NotLeader:
                continue
            except Exception:
                log.exception("status flush failed")

    def wake(self) -> None:
        self._wake.set()

    def apply_policy(self, policy: Policy) -> None:
        """Fair sharing is the policy's to switch; a change takes effect from the next cycle."""
        wanted = FairSharing(policy.fair_sharing.enable, policy.fair_sharing.preemption_strategies)
        with self._lock:
            if self.state.fair_sharing == wanted:
                return
            self.state.fair_sharing = wanted
        log.info("fair sharing %s", "on" if wanted.enable else "off")
        self.wake()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.tick)
            self._wake.clear()
            if self._stop.is_set() or not self.is_leader():
                continue
            try:
                while self.cycle() and not self._stop.is_set():
                    pass  # back-to-back cycles while they change something, as Kueue's loop does
            except NotLeader:
                continue
            except Exception:
                log.exception("admission cycle failed")

    def cycle(self) -> bool:
        """One cycle: decide under the lock, then write. Returns whether anything was admitted or evicted."""
        now = self.clock.now()
        started = self.clock.monotonic()
        with self._lock:
            drains = drain_evictions(self.state)
            for evict in drains:
                self.state.mark_evicted(evict.workload)
            heads = self.state.pending.heads(lambda cq: self.state.inactive_reason(cq) is None)
            result = run_cycle(self.state, heads, now)
            for admit in result.admit:
                self.state.assume(admit.workload, admit.cluster_queue, admit.assignment.usage,
                                  admit.assignment.flavors, now)
            victims = []
            for preempt in result.preempt:
                for target in preempt.targets:
                    if self.state.mark_evicted(target.workload):
                        victims.append((preempt, target))
            for requeue in result.requeue:
                self.state.requeue(requeue.workload, requeue.queue, requeue.reason)
                self._dirty.add(requeue.workload)
            infos = {a.workload: self.state.workloads[a.workload] for a in result.admit}
            uids = {p.preemptor: self.state.workloads[p.preemptor].uid for p in result.preempt}
            for key in self._dirty:
                if self.state.is_pending(key):
                    self._reasons[key] = self._pending_message(key)
            self._dirty.clear()
            self.cycles += 1
        self.metrics.cycle_duration.observe(self.clock.monotonic() - started)
        for admit in result.admit:
            self._submit(admit.workload, -infos[admit.workload].priority, self._write_admission, admit,
                         infos[admit.workload], now)
        for preempt, target in victims:
            self._submit(target.workload, URGENT, self._write, target.workload,
                         lambda wl, t=target, p=preempt: status.released_at_once(
                             wl, status.preemption_patch(wl, t, uids[p.preemptor], now), now),
                         ("Normal", "Preempted", keys.COND_PREEMPTED))
            self.metrics.evictions.labels(target.cluster_queue, "Preempted").inc()
        for evict in drains:
            self._submit(evict.workload, URGENT, self._write, evict.workload,
                         lambda wl, e=evict: status.released_at_once(wl, status.stop_eviction_patch(wl, e, now), now),
                         ("Normal", "Evicted", keys.COND_EVICTED))
        self._release_ownerless(now)
        return bool(result.admit or victims or drains)

    def _submit(self, key: str, rank: float, fn: Callable[..., Any], *args: Any) -> None:
        """Write in the background, most urgent first (evictions, then by priority). Writes of one
        workload run one at a time, in order: a later one waits for the one in flight."""
        item = (rank, next(self._seq), key, fn, args)
        with self._lock:
            if key in self._in_flight:
                self._follow_ups.setdefault(key, []).append(item)
                return
            self._in_flight.add(key)
        self._writes.put(item)

    def _write_loop(self) -> None:
        while not self._stop.is_set():
            try:
                _, _, key, fn, args = self._writes.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                fn(*args)
            except NotLeader:
                pass
            except Exception as exc:
                log.warning("writing %s failed: %s", key, exc)
            finally:
                with self._lock:
                    waiting = self._follow_ups.get(key)
                    if waiting:
                        self._writes.put(waiting.pop(0))
                        if not waiting:
                            del self._follow_ups[key]
                    else:
                        self._in_flight.discard(key)

    def _flush_status(self, now: Any) -> None:
        """Pending reasons, then ClusterQueue and LocalQueue status, from the limiter's spare capacity only."""
        floor = max(1.0, self.reserve)
        while True:
            if self.spare_capacity() < floor:
                return
            with self._lock:
                if not self._reasons:
                    break
                key, message = self._reasons.popitem()
                if not self.state.is_pending(key):
                    continue
            self._write(key, lambda wl, m=message: status.pending_patch(wl, m, now),
                        ("Warning", "Pending", keys.COND_QUOTA_RESERVED))
        self._write_cluster_queues(now, floor)
        self._write_local_queues(now, floor)

    def _pending_message(self, key: str) -> str:
        if key in self.state.blocked:
            return self.state.blocked[key]
        cq = self.state.cluster_queue_of(key)
        inactive = self.state.inactive_reason(cq) if cq else None
        return inactive or self.state.messages.get(key) or "Workload is waiting for quota"

    # --- writes ------------------------------------------------------------------------------
    def _observed(self, key: str) -> Mapping[str, Any] | None:
        namespace, _, name = key.partition("/")
        return self.store.get("Workload", namespace, name)

    def _write(self, key: str, compute: Callable[[Mapping[str, Any]], Any], event: tuple[str, str, str]) -> bool:
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
            self.recorder.record(written, type_, reason, (condition(written, told_by) or {}).get("message", ""))
        return True

    def _write_admission(self, admit: Any, info: Any, now: Any) -> None:
        with self._lock:
            held = self.state.admitted.get(admit.workload)
            if held is not None and held.evicted:
                # Preempted before its admission reached the API: it never held quota there.
                self.state.release(admit.workload, requeue=True)
                self._wake.set()
                return
        try:
            ok = self._write(admit.workload, lambda wl: status.admission_patch(wl, admit, info, now),
                             ("Normal", "QuotaReserved", keys.COND_QUOTA_RESERVED))
        except NotLeader:
            ok = False
        except Exception as exc:
            log.warning("admitting %s failed: %s", admit.workload, exc)
            ok = False
        if not ok:
            with self._lock:  # forget the assumption: the quota goes back, the workload waits again
                if admit.workload in self.state.workloads:
                    self.state.release(admit.workload, requeue=True)
            self._wake.set()
            return
        self.metrics.admitted.labels(admit.cluster_queue).inc()

    def _release_ownerless(self, now: Any) -> None:
        with self._lock:
            evicted = [key for key, held in self.state.admitted.items() if held.evicted]
        for key in evicted:
            observed = self._observed(key)
            if (observed is not None and controller_owner(observed) is None and is_true(observed, keys.COND_EVICTED)
                    and (observed.get("status") or {}).get("admission")):
                self._submit(key, URGENT, self._write, key, lambda wl: status.release_patch(wl, now),
                             ("Normal", "QuotaReleased", keys.COND_QUOTA_RESERVED))

    def _write_cluster_queues(self, now: Any, floor: float) -> None:
        with self._lock:
            wanted = {name: queue_status.cluster_queue_status(self.state, name) for name in self.state.cluster_queues}
            for name, cq_status in wanted.items():
                queue = self.state.pending.queues.get(name)
                self.metrics.pending.labels(name, "active").set(len(queue.active) if queue else 0)
                self.metrics.pending.labels(name, "inadmissible").set(len(queue.inadmissible) if queue else 0)
        for name, cq_status in wanted.items():
            if self._written_cq.get(name) == cq_status:
                continue
            if self.spare_capacity() < floor:
                return
            observed = self.store.get("ClusterQueue", "", name)
            if observed is None:
                continue
            try:
                written = self.writer.update_status(CLUSTER_QUEUES, observed,
                                                    lambda cur, w=cq_status: status.status_patch(cur, w, now))
            except ApiError as exc:
                log.warning("ClusterQueue %s status: %s", name, exc)
                continue
            self._written_cq[name] = cq_status
            if written is not None:
                self.store.assume("ClusterQueue", written)

    def _write_local_queues(self, now: Any, floor: float) -> None:
        with self._lock:
            wanted = {key: queue_status.local_queue_status(self.state, *key) for key in self.state.local_queues}
        for (namespace, name), lq_status in wanted.items():
            if self._written_lq.get((namespace, name)) == lq_status:
                continue
            if self.spare_capacity() < floor:
                return
            observed = self.store.get("LocalQueue", namespace, name)
            if observed is None:
                continue
            try:
                written = self.writer.update_status(LOCAL_QUEUES, observed,
                                                    lambda cur, w=lq_status: status.status_patch(cur, w, now))
            except ApiError as exc:
                log.warning("LocalQueue %s/%s status: %s", namespace, name, exc)
                continue
            self._written_lq[(namespace, name)] = lq_status
            if written is not None:
                self.store.assume("LocalQueue", written)
