"""The in-memory mirror quota admission reads: objects, admitted usage and pending queues.

It is fed object by object (as a watch would feed it) and by the effects of decisions
(`assume`, `mark_evicted`, `release`). Every quota-freeing event asks the parked workloads of
the affected cohort back into their heaps, as Kueue's queue manager does: at once (v0.10), or once
the `requeue_batch` period it starts is over (v0.17's requeuer; `requeue_due` before each cycle).
Nothing here decides who gets quota; `controller.decisions.quota.admission` does, reading this state.

`settled` tells whether another cycle would repeat the last one exactly: a cycle that changed
none of its own inputs marks the state settled (`mark_settled`), and any change made from outside
a cycle (an object observed, a release, a policy switch) unsettles it, so a loop can run cycles
only when one may decide something new.
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass, field, replace
from typing import Any, Hashable, Mapping

from batchgate import keys
from batchgate.api.kueue import (
    ClusterQueue, FieldError, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass, WPC_SOURCE,
    validate_cluster_queue,
)
from batchgate.api.kueue_fields import string_map
from batchgate.api.node_affinity import NodeAffinity
from batchgate.api.objects import metadata
from batchgate.frozen import frozen
from batchgate.policy import Admission, FairSharing
from controller.state.cache import ObjectKey
from controller.state.pending_queues import PendingQueues, sort_key
from controller.state.quota_book import QuotaBook, Usage, to_units
from controller.state.recall import Recall

EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
QUOTA_KINDS = ("Namespace", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Workload")
"""The kinds quota admission reads, in the order a trace applies them."""


def workload_key(namespace: str, name: str) -> ObjectKey:
    """A Workload's key: the cache's, the quota state's and its decisions' alike."""
    return ObjectKey("Workload", namespace, name)


@frozen
class PodSetRequest:
    name: str
    count: int
    total: Mapping[str, int]  # count x per-pod request, integer units
    tolerations: tuple[Mapping[str, object], ...] = ()
    affinity: NodeAffinity = NodeAffinity()


@frozen
class WorkloadInfo:
    """A Workload reduced to what admission compares: priority, queue order and requests."""

    key: ObjectKey
    namespace: str
    queue_name: str
    priority: int
    timestamp: _dt.datetime
    uid: str
    pod_sets: tuple[PodSetRequest, ...]
    active: bool = True

    @functools.cached_property
    def requests_key(self) -> str:
        """The pod sets as one hashable value, made once (what a recalled nomination is keyed by)."""
        return repr(self.pod_sets)

    @property
    def scheduling_class(self) -> tuple[int, str]:
        """Priority and pod sets: what Kueue's scheduling equivalence hash covers (the namespace
        and creation time are not in it), for admission.schedulingEquivalenceHashing."""
        return self.priority, self.requests_key


@frozen
class AdmittedWorkload:
    """A workload holding quota in `cluster_queue` (until its eviction completes)."""

    info: WorkloadInfo
    cluster_queue: str
    usage: Mapping[tuple[str, str], int]
    flavors: Mapping[str, Mapping[str, str]]
    reserved_at: _dt.datetime | None
    evicted: bool = False


@frozen
class FlavorProgress:
    """Kueue's LastAssignment: where flavor assignment stopped, valid while the ClusterQueue's
    generation (bumped when its quota changes or one of its workloads leaves) is unchanged."""

    generation: int
    tried: tuple[Mapping[str, int], ...]

    # Both are read for every head of every cycle, and a recalled nomination shares one progress
    # among many heads: computed once each (`tried` is never changed after it is made).
    @functools.cached_property
    def pending_flavors(self) -> bool:
        """Flavors were left untried (Kueue's PendingFlavors): the next attempt may still fit."""
        return any(index >= 0 for tried in self.tried for index in tried.values())

    @functools.cached_property
    def shape(self) -> tuple[int, str]:
        """The progress as one hashable value (part of what a recalled nomination is keyed by)."""
        return self.generation, repr(self.tried)


@dataclass
class QuotaState:
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    flavors: dict[str, ResourceFlavor] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], LocalQueue] = field(default_factory=dict)
    priority_classes: dict[str, WorkloadPriorityClass] = field(default_factory=dict)
    workloads: dict[ObjectKey, WorkloadInfo] = field(default_factory=dict)
    admitted: dict[ObjectKey, AdmittedWorkload] = field(default_factory=dict)
    admitted_by_cq: dict[str, dict[ObjectKey, AdmittedWorkload]] = field(default_factory=dict)
    unreserved: dict[str, int] = field(default_factory=dict)  # per ClusterQueue: held without a reservation time
    finished: set[ObjectKey] = field(default_factory=set)
    book: QuotaBook = field(default_factory=QuotaBook)
    pending: PendingQueues = field(default_factory=PendingQueues)
    blocked: dict[ObjectKey, str] = field(default_factory=dict)  # pending outside any heap, with why
    messages: dict[ObjectKey, str] = field(default_factory=dict)  # last cycle's reason per pending workload
    _inactive: dict[str, str | None] = field(default_factory=dict)  # cache; cleared when CQs or flavors change
    fair_sharing: FairSharing = FairSharing()
    requeue_batch: _dt.timedelta = _dt.timedelta(0)  # policy admission.requeueBatchPeriod: see _ask_back
    # policy admission.schedulingEquivalenceHashing (see requeue), the policy's default until it says
    equivalence_hashing: bool = Admission().scheduling_equivalence_hashing
    # scopes whose parked workloads are asked back, with when (None: no cycle has started the period yet)
    _requeues: dict[tuple[str, str], _dt.datetime | None] = field(default_factory=dict)
    draining: set[str] = field(default_factory=set)  # ClusterQueues with a HoldAndDrain queue (CQ or LQ)
    generation: dict[str, int] = field(default_factory=dict)  # per ClusterQueue, for FlavorProgress
    flavor_progress: dict[ObjectKey, FlavorProgress] = field(default_factory=dict)
    # the fair-sharing policy the last cycle ran under, if it changed nothing; None once anything changed
    _settled_under: FairSharing | None = None
    nominations: Recall = field(default_factory=Recall, compare=False, repr=False)  # see nomination_scope
    queue_views: Recall = field(default_factory=Recall, compare=False, repr=False)  # see queue_version
    _objects_version: int = 0  # bumped when queues, flavors, namespaces or priority classes change
    _held_versions: dict[tuple[str, str], int] = field(default_factory=dict)  # per nomination scope
    # pending workloads (in a heap, parked or blocked) per LocalQueue, kept as they move: see pending_in
    _pending_by_queue: dict[tuple[str, str], int] = field(default_factory=dict, compare=False, repr=False)
    _counted_in: dict[ObjectKey, tuple[str, str]] = field(default_factory=dict, compare=False, repr=False)

    # --- whether a cycle can decide anything new -----------------------------------------------
    @property
    def settled(self) -> bool:
        """Nothing changed since a cycle that changed none of its inputs: another would repeat it."""
        return self._settled_under == self.fair_sharing

    def mark_settled(self, settled: bool) -> None:
        """Called once per cycle by `apply_cycle`: whether that cycle left its inputs as they were."""
        self._settled_under = self.fair_sharing if settled else None

    # --- lookups -----------------------------------------------------------------------------
    def nomination_scope(self, cluster_queue: str) -> tuple[tuple[str, str], tuple[int, int, FairSharing]]:
        """What a nomination in `cluster_queue` reads besides the workload itself, as (scope,
        version): its cohort (or the queue alone), and a version that moves whenever usage or a held
        workload changes there, or an object every nomination reads, or the fair-sharing policy."""
        scope = self._scope_of(cluster_queue)
        return scope, (self._objects_version, self._held_versions.get(scope, 0), self.fair_sharing)

    def queue_version(self, cluster_queue: str) -> Hashable:
        """A value that moves whenever a ClusterQueue's own status or gauges may say something new:
        its spec, flavors, usage and held workloads (the nomination version, which covers its
        cohort's), or the number of its pending workloads, active or parked."""
        queue = self.pending.queues.get(cluster_queue)
        counts = (queue.active_count, queue.parked_count) if queue is not None else (0, 0)
        return self.nomination_scope(cluster_queue)[1], counts

    def holds_unreserved(self, cluster_queue: str) -> bool:
        """Whether a workload held in the queue's cohort has no reservation time (no QuotaReserved
        condition): preemption then orders it by the time of the cycle."""
        return any(self.unreserved.get(member) for member in self.book.cohort_members(cluster_queue))

    def _scope_of(self, cluster_queue: str) -> tuple[str, str]:
        cohort = self.book.cohort_of.get(cluster_queue, "")
        return ("cohort", cohort) if cohort else ("queue", cluster_queue)

    def _held_changed(self, cluster_queue: str) -> None:
        scope = self._scope_of(cluster_queue)
        self._held_versions[scope] = self._held_versions.get(scope, 0) + 1

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace, {})

    def cluster_queue_of(self, workload: ObjectKey) -> str | None:
        info = self.workloads[workload]
        lq = self.local_queues.get((info.namespace, info.queue_name))
        return None if lq is None else lq.cluster_queue

    def missing_flavors(self, cq: ClusterQueue) -> list[str]:
        return [name for name in cq.flavor_names if name not in self.flavors]

    def inactive_reason(self, name: str) -> str | None:
        """Why a ClusterQueue admits nothing now, in the words of the Workload condition."""
        if name not in self._inactive:
            self._inactive[name] = self._inactive_reason(name)
        return self._inactive[name]

    def _inactive_reason(self, name: str) -> str | None:
        cq = self.cluster_queues.get(name)
        if cq is None:
            return f"ClusterQueue {name} doesn't exist"
        if cq.stop_policy != "None":
            return f"ClusterQueue {name} is stopped"
        if self.missing_flavors(cq):
            return f"ClusterQueue {name} is inactive"
        return None

    def pending_in(self, namespace: str, local_queue: str) -> int:
        """How many workloads of a LocalQueue wait: counted as they move, so a status flush over
        many LocalQueues does not walk every pending workload once per queue."""
        return self._pending_by_queue.get((namespace, local_queue), 0)

    def _count_pending(self, workload: ObjectKey) -> None:
        """Called wherever `workload` may have entered or left the heaps, the parked or the blocked."""
        queue = self._counted_in.pop(workload, None)
        if queue is not None:
            left = self._pending_by_queue[queue] - 1
            if left:
                self._pending_by_queue[queue] = left
            else:
                del self._pending_by_queue[queue]
        if workload in self.pending.where or workload in self.blocked:
            info = self.workloads[workload]
            queue = self._counted_in[workload] = (info.namespace, info.queue_name)
            self._pending_by_queue[queue] = self._pending_by_queue.get(queue, 0) + 1

    def is_pending(self, workload: ObjectKey) -> bool:
        return (workload in self.workloads and workload not in self.admitted
                and workload not in self.finished)

    def pending_reason(self, workload: ObjectKey) -> tuple[str, str]:
        """Where a pending workload waits (active or inadmissible) and why, as users read it;
        the message is empty until a cycle has looked at it or at the head that parked its class
        (Kueue v0.19 writes "Bypassed scheduling evaluation..." there, behind another gate)."""
        if workload in self.blocked:
            return "inadmissible", self.blocked[workload]
        queue = self.pending.state_of(workload) or "inadmissible"
        cq = self.cluster_queue_of(workload)
        inactive = self.inactive_reason(cq) if cq else None
        if inactive:
            return queue, inactive
        with_class = self.pending.class_reason(workload) if queue == "inadmissible" else None
        return queue, self.messages.get(workload, "") if with_class is None else with_class

    # --- objects -----------------------------------------------------------------------------
    def observe(self, raw: Mapping[str, Any], created: _dt.datetime) -> bool:
        """Feed one object as observed (a watch event, a trace entry): parsed, validated, stored.

        A Workload without a creationTimestamp is taken as created at `created`. Returns False
        when the object tells nothing new (a status echo, a resync). Raises FieldError naming the
        field of an object that cannot be understood.
        """
        kind = raw.get("kind")
        if kind == "Namespace":
            meta = metadata(raw)
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str) or not name:
                raise FieldError("metadata.name", "is required")
            return self.put_namespace(name, string_map(meta.get("labels"), "metadata.labels"))
        elif kind == "ResourceFlavor":
            return self.put_flavor(ResourceFlavor.from_dict(raw))
        elif kind == "WorkloadPriorityClass":
            return self.put_priority_class(WorkloadPriorityClass.from_dict(raw))
        elif kind == "ClusterQueue":
            cq = ClusterQueue.from_dict(raw)
            errors = validate_cluster_queue(cq)
            if errors:
                raise errors[0]
            return self.put_cluster_queue(cq)
        elif kind == "LocalQueue":
            return self.put_local_queue(LocalQueue.from_dict(raw))
        elif kind == "Workload":
            wl = Workload.from_dict(raw)
            if wl.creation_timestamp is None:
                wl = replace(wl, creation_timestamp=created)
            return self.put_workload(wl)
        else:
            raise FieldError("kind", f"must be one of {', '.join(QUOTA_KINDS)}, got {kind!r}")

    # Each put returns early (False) when the spec it models is unchanged (a status update, a
    # resync), so only real changes bump generations, move parked workloads back and unsettle.
    # A namespace or a flavor asks back only the ClusterQueues it may open, as Kueue does: another
    # team's new namespace or flavor frees no quota, so it must not make parked workloads try again.
    def put_namespace(self, name: str, labels: Mapping[str, str]) -> bool:
        """Kueue's `cqNamespaceHandler`: a namespace asks back the ClusterQueues whose selector
        selects it now and did not before (a namespace not seen yet was read as unlabelled)."""
        before = self.namespaces.get(name, {})
        if name in self.namespaces and before == dict(labels):
            return False
        self.namespaces[name] = dict(labels)
        self._settled_under = None
        self._objects_version += 1
        for cq_name, cq in self.cluster_queues.items():
            selector = cq.namespace_selector
            if selector is not None and selector.matches(labels) and not selector.matches(before):
                self._ask_back(self._scope_of(cq_name))
        return True

    def put_flavor(self, flavor: ResourceFlavor) -> bool:
        """A new or changed flavor asks back the ClusterQueues that name it (Kueue v0.17 those it
        makes active; later Kueue, kubernetes-sigs/kueue#13734, also those whose flavor's labels,
        taints or tolerations changed)."""
        if self.flavors.get(flavor.name) == flavor:
            return False
        self.flavors[flavor.name] = flavor
        self._settled_under = None
        self._objects_version += 1
        self._inactive.clear()
        for cq_name, cq in self.cluster_queues.items():
            if flavor.name in cq.flavor_names:
                self._ask_back(self._scope_of(cq_name))
        return True

    def put_priority_class(self, wpc: WorkloadPriorityClass) -> bool:
        if self.priority_classes.get(wpc.name) == wpc:
            return False
        self.priority_classes[wpc.name] = wpc
        self._settled_under = None
        self._objects_version += 1
        return True

    def put_cluster_queue(self, cq: ClusterQueue) -> bool:
        old = self.cluster_queues.get(cq.name)
        if old == cq:
            return False
        self.cluster_queues[cq.name] = cq
        self._settled_under = None
        self._objects_version += 1
        self._inactive.clear()
        self._track_draining()
        self.book.set_cluster_queue(cq)
        for member in {cq.name, *self.book.cohort_members(cq.name),
                       *(self.book.members.get(old.cohort, ()) if old is not None and old.cohort else ())}:
            self._bump(member)
        if old is None:  # workloads observed holding quota here before the queue itself
            for held in self.admitted_by_cq.get(cq.name, {}).values():
                self.book.add_usage(cq.name, held.usage)
        self._reroute_blocked()
        self._ask_back(self._scope_of(cq.name))
        if old is not None and old.cohort and old.cohort != cq.cohort:
            self._ask_back(("cohort", old.cohort))
        return True

    def put_local_queue(self, lq: LocalQueue) -> bool:
        if self.local_queues.get((lq.namespace, lq.name)) == lq:
            return False
        self.local_queues[(lq.namespace, lq.name)] = lq
        self._settled_under = None
        self._objects_version += 1
        self._track_draining()
        for key in [k for k, info in self.workloads.items()
                    if (info.namespace, info.queue_name) == (lq.namespace, lq.name) and self.is_pending(k)]:
            self._route(key)
        return True

    def put_workload(self, wl: Workload) -> bool:
        """Create or replace a Workload as observed (pending, holding quota, or finished).

        Seeing again what is already known (our own status writes coming back) changes nothing:
        a parked workload stays parked and an admitted one does not release and retake its quota.
        """
        key = workload_key(wl.namespace, wl.name)
        previous = self.workloads.get(key)
        in_heap = self.pending.state_of(key) == "active"
        info = self._info(wl)
        finished = wl.is_true(keys.COND_FINISHED)
        held = None if finished or not wl.holds_quota else self._held_from(wl, info)
        if previous == info and finished and key in self.finished:
            return False  # still finished
        if previous == info and not finished and key not in self.finished:
            old = self.admitted.get(key)
            if held is None and old is None:
                return False  # still pending where it waits
            if held is not None and old is not None and (held.cluster_queue, held.usage) == (old.cluster_queue, old.usage):
                held = replace(held, evicted=held.evicted or old.evicted)
                self._set_held(held)
                if held != old:  # what preemption reads (eviction, reservation time) changed
                    self._settled_under = None
                return held.evicted and not old.evicted
        self._settled_under = None
        if previous is not None:
            self.forget(key)
        self.workloads[key] = info
        if finished:
            self.finished.add(key)
        elif held is not None:
            self._hold(held)
        else:
            self._route(key, arriving=not in_heap)
        return True

    @staticmethod
    def _held_from(wl: Workload, info: WorkloadInfo) -> AdmittedWorkload:
        assert wl.admission is not None
        usage: Usage = {}
        flavors: dict[str, dict[str, str]] = {}
        for psa in wl.admission.pod_set_assignments:
            flavors[psa.name] = dict(psa.flavors)
            for resource, value in psa.usage().items():
                fr = (psa.flavors.get(resource, ""), resource)
                usage[fr] = usage.get(fr, 0) + to_units(resource, value)
        reserved = wl.condition(keys.COND_QUOTA_RESERVED)
        return AdmittedWorkload(info, wl.admission.cluster_queue, usage, flavors,
                                reserved.last_transition_time if reserved else None,
                                evicted=wl.is_true(keys.COND_EVICTED))

    def _info(self, wl: Workload) -> WorkloadInfo:
        priority = wl.priority
        if priority is None and wl.priority_class_name and wl.priority_class_source in ("", WPC_SOURCE):
            wpc = self.priority_classes.get(wl.priority_class_name)
            priority = wpc.value if wpc else None
        pod_sets = tuple(
            PodSetRequest(ps.name, ps.remaining, {r: to_units(r, v) for r, v in ps.total().items() if v},
                          ps.tolerations, ps.affinity)
            for ps in wl.pod_sets
        )
        return WorkloadInfo(workload_key(wl.namespace, wl.name), wl.namespace, wl.queue_name, priority or 0,
                            wl.creation_timestamp or EPOCH, wl.uid or wl.key, pod_sets, wl.active)

    # --- effects of decisions ----------------------------------------------------------------
    def assume(self, workload: ObjectKey, cluster_queue: str, usage: Mapping[tuple[str, str], int],
               flavors: Mapping[str, Mapping[str, str]], now: _dt.datetime) -> None:
        """Record an admission; the caller writes it to the API and calls `forget` on failure.

        The reservation time is kept at the second, as the API stores a condition's time: its
        echo then reads back equal and leaves the cohort's recalled nominations standing.
        """
        self._settled_under = None
        if workload in self.admitted:
            raise ValueError(f"workload {workload} already holds quota")
        self.pending.remove(workload)
        self.blocked.pop(workload, None)
        self.messages.pop(workload, None)
        self.flavor_progress.pop(workload, None)
        self._hold(AdmittedWorkload(self.workloads[workload], cluster_queue, dict(usage),
                                    {k: dict(v) for k, v in flavors.items()}, now.replace(microsecond=0)))

    def mark_evicted(self, workload: ObjectKey) -> bool:
        """Evicted=True: it still holds quota until its pods are gone. False if already so."""
        self._settled_under = None
        held = self.admitted[workload]
        if held.evicted:
            return False
        self._set_held(replace(held, evicted=True))
        return True

    def release(self, workload: ObjectKey, *, requeue: bool, retry: bool = False) -> None:
        """Quota is freed (eviction completed, finished, deleted); the cohort's parked work is asked back.
        `requeue`: the workload waits again, as one arriving (an evicted one), or with `retry` (its
        admission was not written: Kueue's immediate requeue) straight in its heap."""
        self._settled_under = None
        held = self.admitted.pop(workload, None)
        self.flavor_progress.pop(workload, None)
        if held is not None:
            self._bump(held.cluster_queue)
            self._held_changed(held.cluster_queue)
            self.admitted_by_cq[held.cluster_queue].pop(workload, None)
            self._count_unreserved(held, -1)
            if held.cluster_queue in self.book.quotas:
                self.book.add_usage(held.cluster_queue, {fr: -v for fr, v in held.usage.items()})
            self._ask_back(self._scope_of(held.cluster_queue))
        if requeue:
            self._route(workload, arriving=not retry)

    def finish(self, workload: ObjectKey) -> None:
        self._settled_under = None
        self.release(workload, requeue=False)
        self.pending.remove(workload)
        self.blocked.pop(workload, None)
        self.messages.pop(workload, None)
        self.finished.add(workload)
        self._count_pending(workload)

    def forget(self, workload: ObjectKey) -> None:
        """The workload is gone (deleted, or replaced by a newer observation)."""
        self._settled_under = None
        self.release(workload, requeue=False)
        self.flavor_progress.pop(workload, None)
        self.pending.remove(workload)
        self.blocked.pop(workload, None)
        self._count_pending(workload)
        self.messages.pop(workload, None)
        self.finished.discard(workload)
        self.workloads.pop(workload, None)

    def current_progress(self, workload: ObjectKey, cluster_queue: str) -> FlavorProgress | None:
        progress = self.flavor_progress.get(workload)
        if progress is None or progress.generation < self.generation.get(cluster_queue, 0):
            return None
        return progress

    def set_progress(self, workload: ObjectKey, progress: FlavorProgress | None) -> None:
        self._settled_under = None
        if progress is None:
            self.flavor_progress.pop(workload, None)
        else:
            self.flavor_progress[workload] = progress

    def _bump(self, cluster_queue: str) -> None:
        self.generation[cluster_queue] = self.generation.get(cluster_queue, 0) + 1

    def requeue(self, workload: ObjectKey, queue: str, message: str, *, preempting: bool = False,
                no_fit: bool = False) -> None:
        """Where a head that was not admitted waits; one that issued preemptions is its queue's
        preemptor (and, in a BestEffortFIFO queue, stays the head) until admitted or requeued for
        another reason. A parked head that found no room (`no_fit`) parks its class with it."""
        self._settled_under = None
        self.messages[workload] = message
        cq = self.cluster_queues.get(self.pending.where.get(workload, ""))
        self.pending.set_preemptor(workload, preempting, cq is not None and cq.queueing_strategy != "StrictFIFO")
        if queue == "inadmissible":
            self.pending.park(workload)
            if no_fit and self._hashing(cq):
                assert cq is not None
                self.pending.queue(cq.name).park_class(self.workloads[workload].scheduling_class, message)

    def _hashing(self, cq: ClusterQueue | None) -> bool:
        """Whether equivalent workloads are parked together in `cq`: with the policy switch, in a
        BestEffortFIFO queue (StrictFIFO keeps its order: Kueue's handleInadmissibleHash)."""
        return self.equivalence_hashing and cq is not None and cq.queueing_strategy == "BestEffortFIFO"

    def _bucket_of(self, workload: ObjectKey) -> Hashable:
        """The bucket a workload waits in: its scheduling class with equivalence hashing, else one
        for all (`ClusterQueuePending`)."""
        return self.workloads[workload].scheduling_class if self.equivalence_hashing else None

    def set_equivalence_hashing(self, on: bool) -> None:
        """A policy change: the queues' buckets follow. Switched off, no class is remembered any
        more; what it parked waits for the next ask-back, as the head that did not fit does."""
        if on == self.equivalence_hashing:
            return
        self.equivalence_hashing = on
        self.pending.repartition(self._bucket_of)
        if not on:
            for queue in self.pending.queues.values():
                queue.no_fit.clear()

    # --- parked workloads asked back -----------------------------------------------------------
    def _ask_back(self, scope: tuple[str, str]) -> None:
        """The parked workloads of `scope` (a cohort, or a ClusterQueue in none) may fit now: back to
        their heaps at once (Kueue v0.10), or with `requeue_batch` when the period the first such
        request starts is over, later requests joining it (Kueue v0.17's requeuer,
        `pkg/cache/queue/inadmissible_workloads.go`: one delayed item per root cohort or queue)."""
        if self.requeue_batch:
            self._requeues.setdefault(scope, None)
        else:
            self._unpark_scope(scope)

    def requeue_due(self, now: _dt.datetime) -> None:
        """Before a cycle: start the period of new requests at `now` and move back the parked
        workloads of every scope whose period is over."""
        for scope, due in list(self._requeues.items()):
            if due is None:
                due = self._requeues[scope] = now + self.requeue_batch
            if due <= now:
                del self._requeues[scope]
                self._unpark_scope(scope)

    @property
    def next_requeue(self) -> _dt.datetime | None:
        """When the earliest started period ends (the loop wakes then), if any."""
        return min((due for due in self._requeues.values() if due is not None), default=None)

    def set_requeue_batch(self, period: _dt.timedelta) -> None:
        """A policy change; without a period, the requests still waiting are carried out now."""
        self.requeue_batch = period
        if not period:
            for scope in list(self._requeues):
                del self._requeues[scope]
                self._unpark_scope(scope)

    def _unpark_scope(self, scope: tuple[str, str]) -> None:
        kind, name = scope
        for member in list(self.book.members.get(name, ())) if kind == "cohort" else [name]:
            if self._unpark(member):
                self._settled_under = None

    def _unpark(self, cluster_queue: str) -> bool:
        """Whether any parked workload of `cluster_queue` went back to its heap."""
        queue = self.pending.queues.get(cluster_queue)
        cq = self.cluster_queues.get(cluster_queue)
        if queue is None or cq is None:
            return False

        selector = cq.namespace_selector
        selected: dict[str, bool] = {}  # per namespace: a cohort's parked work shares a few

        def eligible(namespace: str) -> bool:
            if namespace not in selected:
                selected[namespace] = selector is not None and selector.matches(self.namespace_labels(namespace))
            return selected[namespace]

        return bool(queue.unpark(eligible))

    def _route(self, workload: ObjectKey, *, arriving: bool = False) -> None:
        """Put a pending workload where it waits: its ClusterQueue's heap, or blocked with why. One
        `arriving` (new, changed while not in its heap, or evicted) is parked at once when its class
        did not fit since the queue was last asked back (Kueue's PushOrUpdate); a re-route (its
        LocalQueue or ClusterQueue came or changed) is not (Kueue's AddFromLocalQueue)."""
        info = self.workloads[workload]
        lq = self.local_queues.get((info.namespace, info.queue_name))
        reason = None
        if not info.active:
            reason = "The workload is deactivated"
        elif lq is None:
            reason = f"LocalQueue {info.queue_name} doesn't exist"
        elif lq.stop_policy != "None":
            reason = f"LocalQueue {info.queue_name} is stopped"
        elif lq.cluster_queue not in self.cluster_queues:
            reason = f"ClusterQueue {lq.cluster_queue} doesn't exist"
        if reason is not None:
            self.pending.remove(workload)
            self.blocked[workload] = reason
        else:
            self.blocked.pop(workload, None)
            assert lq is not None
            queue = self.pending.queue(lq.cluster_queue)
            parked = (arriving and self._hashing(self.cluster_queues[lq.cluster_queue])
                      and info.scheduling_class in queue.no_fit)
            self.pending.push(lq.cluster_queue, workload, sort_key(info.priority, info.timestamp, workload),
                              self._bucket_of(workload), parked=parked)
        self._count_pending(workload)

    def _reroute_blocked(self) -> None:
        for workload in list(self.blocked):
            self._route(workload)

    def _hold(self, held: AdmittedWorkload) -> None:
        self._held_changed(held.cluster_queue)
        self.pending.remove(held.info.key)
        self.blocked.pop(held.info.key, None)
        self._count_pending(held.info.key)
        self.admitted[held.info.key] = held
        self.admitted_by_cq.setdefault(held.cluster_queue, {})[held.info.key] = held
        self._count_unreserved(held, 1)
        if held.cluster_queue in self.book.quotas:
            self.book.add_usage(held.cluster_queue, held.usage)

    def _count_unreserved(self, held: AdmittedWorkload, step: int) -> None:
        if held.reserved_at is None:
            self.unreserved[held.cluster_queue] = self.unreserved.get(held.cluster_queue, 0) + step

    def _track_draining(self) -> None:
        self.draining = {name for name, cq in self.cluster_queues.items() if cq.stop_policy == "HoldAndDrain"}
        self.draining |= {lq.cluster_queue for lq in self.local_queues.values() if lq.stop_policy == "HoldAndDrain"}

    def _set_held(self, held: AdmittedWorkload) -> None:
        old = self.admitted.get(held.info.key)
        if old != held:
            self._held_changed(held.cluster_queue)
        if old is not None:
            self._count_unreserved(old, -1)
        self._count_unreserved(held, 1)
        self.admitted[held.info.key] = held
        self.admitted_by_cq[held.cluster_queue][held.info.key] = held
