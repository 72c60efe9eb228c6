"""Per-ClusterQueue pending workloads: ordered heaps plus the inadmissible set.

Order is Kueue's: higher priority first, then the older queue-order timestamp (creation time;
a preempted workload keeps its place). Heaps are lazy: removing a workload only forgets it,
and stale heap entries are dropped when they reach the top, so every operation is O(log n).
Parked (inadmissible) workloads wait outside the heaps until a quota-freeing event moves them back.
With equivalence hashing each scheduling class has its own heap (a bucket), parked and asked
back as a whole without moving its members: a finish then costs the number of classes a cohort
holds, not its backlog.

A workload waiting for the victims it preempted is its queue's *preemptor* (Kueue's
preemptorWorkload, pkg/queue/cluster_queue.go, Kueue#6929, #7101) until it is admitted, leaves
the queue, or is requeued for another reason. In a BestEffortFIFO queue it is also *sticky*: it
stays the head, ahead of any higher-priority workload that the quota freed by its own preemption
moves back from the inadmissible set; and a cycle considers preemptors first (Kueue#13797), so
the room a victim frees goes to the workload it was freed for. Without both, the freed room goes
to another head, often the victim itself, which is admitted again and preempted again: the
suspend/resume flapping of issue 20.
"""

from __future__ import annotations

import datetime as _dt
import heapq
from dataclasses import dataclass, field
from typing import Callable, Hashable, NamedTuple

from controller.state.cache import ObjectKey

SortKey = tuple[int, _dt.datetime, str, ObjectKey]


class ClassRef(NamedTuple):
    """A scheduling class's bucket in one ClusterQueue's queue."""

    cluster_queue: str
    klass: Hashable


def sort_key(priority: int, timestamp: _dt.datetime, workload: ObjectKey) -> SortKey:
    """Queue order; equal priority and time are ordered by `namespace/name`, the workload last."""
    return (-priority, timestamp, workload.namespaced_name, workload)


@dataclass(eq=False, slots=True)
class _Bucket:
    """The waiting workloads of one scheduling class in a queue: a lazy heap of their sort keys.
    Parked as a whole (equivalence hashing), it keeps its members and heap where they are, so
    parking it and asking it back cost the same whatever its size."""

    heap: list[SortKey] = field(default_factory=list)
    members: dict[ObjectKey, SortKey] = field(default_factory=dict)
    parked: bool = False
    listed: SortKey | None = None  # the key of its entry among the queue's bucket heads
    reason: str = ""  # while parked: why the head that parked it did not fit, its members' reason too
    namespaces: dict[str, int] = field(default_factory=dict)  # members per namespace: an ask-back checks these

    def top(self) -> SortKey | None:
        heap, members = self.heap, self.members
        while heap:
            key = heap[0]
            if members.get(key[3]) == key:
                return key
            heapq.heappop(heap)
        return None

    def put(self, workload: ObjectKey, key: SortKey) -> None:
        """Add `workload` or move it to `key` (pushing onto the heap is the caller's)."""
        if workload not in self.members:
            self.namespaces[workload.namespace] = self.namespaces.get(workload.namespace, 0) + 1
        self.members[workload] = key

    def drop(self, workload: ObjectKey) -> SortKey | None:
        key = self.members.pop(workload, None)
        if key is not None:
            left = self.namespaces.pop(workload.namespace) - 1
            if left:
                self.namespaces[workload.namespace] = left
        return key

    def clear(self) -> None:
        self.members.clear()
        self.heap.clear()
        self.namespaces.clear()

    def rebuild(self) -> None:
        """One linear pass (and rid of stale entries) instead of many pushes."""
        self.heap = list(self.members.values())
        heapq.heapify(self.heap)


@dataclass(slots=True)
class ClusterQueuePending:
    """The queue of one ClusterQueue: its waiting workloads in buckets, one per scheduling class
    (a single bucket without equivalence hashing), heads of the buckets in a heap; workloads
    parked one by one in `inadmissible`. `klass` knows every workload's bucket, parked or not."""

    buckets: dict[Hashable, _Bucket] = field(default_factory=dict)
    klass: dict[ObjectKey, Hashable] = field(default_factory=dict)
    inadmissible: dict[ObjectKey, SortKey] = field(default_factory=dict)
    preemptor: ObjectKey | None = None  # the head that is waiting for its preemptions to complete
    sticky: bool = False  # whether the preemptor stays the head (BestEffortFIFO)
    # scheduling classes found not to fit since the parked workloads were last asked back (Kueue's
    # noFitSchedulingHashes; only filled with policy admission.schedulingEquivalenceHashing)
    no_fit: set[Hashable] = field(default_factory=set)
    retold: set[Hashable] = field(default_factory=set)  # classes parked since their members' reasons were noted
    active_count: int = 0  # workloads in buckets not parked
    classed: bool = False  # whether any bucket is a class's (else all wait in one, None's)
    _class_parked: int = 0  # workloads in parked buckets
    _tops: list[tuple[SortKey, int, Hashable]] = field(default_factory=list)  # bucket heads, lazy
    _pushed: int = 0  # orders equal keys in `_tops` (two entries for one workload)

    @property
    def parked_count(self) -> int:
        return len(self.inadmissible) + self._class_parked

    def push(self, workload: ObjectKey, key: SortKey, klass: Hashable = None) -> None:
        """Make `workload` wait in its class's bucket, to be tried (not parked)."""
        bucket = self._enter(workload, klass)
        if bucket.parked:
            self._unpark_one_by_one(bucket)
        self.inadmissible.pop(workload, None)
        if bucket.members.get(workload) == key:
            return
        if workload not in bucket.members:
            self.active_count += 1
        self._add(bucket, klass, workload, key)

    def arrive_parked(self, workload: ObjectKey, key: SortKey, klass: Hashable) -> None:
        """An arrival of a class that did not fit waits parked: in its class's bucket if that is
        parked (Kueue's PushOrUpdate), else on its own."""
        bucket = self._enter(workload, klass)
        if not bucket.parked:
            self.push(workload, key, klass)
            self.park(workload)
            return
        self.inadmissible.pop(workload, None)
        if workload not in bucket.members:
            self._class_parked += 1
        self._add(bucket, klass, workload, key)

    def _enter(self, workload: ObjectKey, klass: Hashable) -> _Bucket:
        """The bucket of `klass`, `workload` taken out of any other it was in."""
        if klass is not None:
            self.classed = True
        previous = self.klass.get(workload, klass)
        if previous != klass:
            self._leave_bucket(workload, previous)
        self.klass[workload] = klass
        bucket = self.buckets.get(klass)
        if bucket is None:
            bucket = self.buckets[klass] = _Bucket()
        return bucket

    def _add(self, bucket: _Bucket, klass: Hashable, workload: ObjectKey, key: SortKey) -> None:
        bucket.put(workload, key)
        heapq.heappush(bucket.heap, key)
        if not bucket.parked and (bucket.listed is None or key < bucket.listed):
            self._list(bucket, klass, key)

    def _list(self, bucket: _Bucket, klass: Hashable, key: SortKey) -> None:
        bucket.listed = key
        self._pushed += 1
        heapq.heappush(self._tops, (key, self._pushed, klass))

    def _leave_bucket(self, workload: ObjectKey, klass: Hashable) -> None:
        bucket = self.buckets.get(klass)
        if bucket is None or bucket.drop(workload) is None:
            return
        if bucket.parked:
            self._class_parked -= 1
        else:
            self.active_count -= 1
        if not bucket.members:
            del self.buckets[klass]

    def _unpark_one_by_one(self, bucket: _Bucket) -> None:
        """A workload must be tried while its class is parked (a re-route, a retry): the others of
        the class stay parked, each on its own."""
        self.inadmissible.update(bucket.members)
        self._class_parked -= len(bucket.members)
        bucket.clear()
        bucket.parked = False
        bucket.listed = None

    def park(self, workload: ObjectKey) -> None:
        bucket = self.buckets.get(self.klass.get(workload))
        if bucket is None or bucket.parked:
            return
        key = bucket.drop(workload)
        if key is not None:
            self.inadmissible[workload] = key
            self.active_count -= 1

    def park_class(self, klass: Hashable, reason: str = "") -> int:
        """A workload of class `klass` did not fit (for `reason`): park every waiting one of that
        class, and remember it for arrivals (Kueue's handleInadmissibleHash). Returns how many were
        parked."""
        self.no_fit.add(klass)
        bucket = self.buckets.get(klass)
        if bucket is None or bucket.parked or not bucket.members:
            return 0
        bucket.parked, bucket.listed, bucket.reason = True, None, reason
        self.retold.add(klass)
        parked = len(bucket.members)
        self.active_count -= parked
        self._class_parked += parked
        return parked

    def remove(self, workload: ObjectKey) -> None:
        klass = self.klass.pop(workload, None)
        if self.inadmissible.pop(workload, None) is None:
            self._leave_bucket(workload, klass)
        if self.preemptor == workload:
            self.preemptor = None

    def class_reason(self, workload: ObjectKey) -> str | None:
        """Why `workload` waits when it waits parked with its class: the reason of the head that
        parked the class, the one it would meet itself (it was not tried since); else None."""
        bucket = self.buckets.get(self.klass.get(workload))
        if bucket is None or not bucket.parked or workload not in bucket.members:
            return None
        return bucket.reason

    def is_active(self, workload: ObjectKey) -> bool:
        """Whether `workload` waits to be tried (in a bucket that is not parked)."""
        bucket = self.buckets.get(self.klass.get(workload))
        return bucket is not None and not bucket.parked and workload in bucket.members

    def head(self) -> ObjectKey | None:
        if self.sticky and self.preemptor is not None and self.is_active(self.preemptor):
            return self.preemptor
        if len(self.buckets) == 1:  # no classes, or one: its top is the head (`_Bucket.top`, inline)
            for only in self.buckets.values():
                if only.parked:
                    return None
                heap, members = only.heap, only.members
                while heap:
                    key = heap[0]
                    if members.get(key[3]) == key:
                        return key[3]
                    heapq.heappop(heap)
                return None
        tops = self._tops
        while tops:
            key, _, klass = tops[0]
            bucket = self.buckets.get(klass)
            if bucket is None or bucket.parked or bucket.listed != key:
                heapq.heappop(tops)  # a bucket gone or parked, or an entry superseded
                continue
            top = bucket.top()
            if top == key:
                return key[3]
            heapq.heappop(tops)  # the head it listed left: list its head now
            bucket.listed = None
            if top is not None:
                self._list(bucket, klass, top)
        return None

    def unpark(self, eligible: Callable[[str], bool]) -> int:
        """Move parked workloads whose namespace passes `eligible` back to be tried, and forget the
        classes that did not fit (what is asked back is tried afresh); returns how many moved. A
        parked bucket goes back whole when every namespace it holds is eligible (a selector is per
        namespace; the bucket counts its members by namespace, so this costs its namespaces, not
        its members), moving none of them; one workload parked on its own goes back to its bucket.

        A cohort's finish often moves back most of a bucket: then its heap is rebuilt at once
        (linear, and rid of its stale entries) rather than pushed into one by one (parked
        workloads are older than most, so each push climbs the whole heap)."""
        self.no_fit.clear()
        moved = 0
        for klass, bucket in list(self.buckets.items()):
            if not bucket.parked:
                continue
            if not all(eligible(namespace) for namespace in bucket.namespaces):
                self._unpark_one_by_one(bucket)  # each judged on its own below
                del self.buckets[klass]
                continue
            bucket.parked = False
            moved += len(bucket.members)
            top = bucket.top()
            if top is not None:
                self._list(bucket, klass, top)
        self.active_count += moved
        self._class_parked -= moved
        one_by_one = [w for w in self.inadmissible if eligible(w.namespace)]
        by_bucket: dict[Hashable, list[ObjectKey]] = {}
        if self.classed:
            for workload in one_by_one:
                by_bucket.setdefault(self.klass[workload], []).append(workload)
        elif one_by_one:
            by_bucket[None] = one_by_one
        for klass, workloads in by_bucket.items():
            bucket = self._enter(workloads[0], klass)
            if len(workloads) * 4 < len(bucket.members):
                for workload in workloads:
                    self._add(bucket, klass, workload, self.inadmissible.pop(workload))
            else:
                for workload in workloads:
                    bucket.put(workload, self.inadmissible.pop(workload))
                bucket.rebuild()
                top = bucket.top()
                if top is not None and (bucket.listed is None or top < bucket.listed):
                    self._list(bucket, klass, top)
            self.active_count += len(workloads)
        return moved + len(one_by_one)

    def repartition(self, partition: Callable[[ObjectKey], Hashable]) -> None:
        """Buckets by another partition (equivalence hashing switched on or off); what a parked
        bucket held stays parked, each on its own."""
        waiting = [(w, k, b.parked) for b in self.buckets.values() for w, k in b.members.items()]
        self.buckets, self._tops, self.active_count, self._class_parked, self.classed = {}, [], 0, 0, False
        for workload, key, parked in waiting:
            if parked:
                self.inadmissible[workload] = key
            else:
                self.push(workload, key, partition(workload))
        for workload in self.inadmissible:
            self.klass[workload] = klass = partition(workload)
            self.classed |= klass is not None

    def __contains__(self, workload: ObjectKey) -> bool:
        return workload in self.klass

    def __len__(self) -> int:
        return len(self.klass)


class PendingQueues:
    """All ClusterQueues' pending queues, keyed by ClusterQueue name."""

    def __init__(self) -> None:
        self.queues: dict[str, ClusterQueuePending] = {}
        self.where: dict[ObjectKey, str] = {}  # workload -> ClusterQueue whose queue holds it

    def queue(self, cq: str) -> ClusterQueuePending:
        queue = self.queues.get(cq)
        if queue is None:
            queue = self.queues[cq] = ClusterQueuePending()
        return queue

    def push(self, cq: str, workload: ObjectKey, key: SortKey, klass: Hashable = None, *,
             parked: bool = False) -> None:
        """`workload` waits in `cq`'s queue, in the bucket of `klass`: to be tried, or `parked` as
        an arrival of a class that did not fit (`ClusterQueuePending.arrive_parked`)."""
        previous = self.where.get(workload)
        if previous is not None and previous != cq:
            self.queues[previous].remove(workload)
        self.where[workload] = cq
        if parked:
            self.queue(cq).arrive_parked(workload, key, klass)
        else:
            self.queue(cq).push(workload, key, klass)

    def park(self, workload: ObjectKey) -> None:
        cq = self.where.get(workload)
        if cq is not None:
            self.queues[cq].park(workload)

    def set_preemptor(self, workload: ObjectKey, preempting: bool, sticky: bool) -> None:
        """Make `workload` its queue's preemptor (it issued preemptions), or stop it being so."""
        cq = self.where.get(workload)
        if cq is None:
            return
        queue = self.queues[cq]
        if preempting:
            queue.preemptor, queue.sticky = workload, sticky
        elif queue.preemptor == workload:
            queue.preemptor = None

    def preemption_of(self, workload: ObjectKey) -> tuple[ObjectKey | None, bool]:
        """The preemptor of `workload`'s queue and whether it is sticky: what orders its next heads."""
        cq = self.where.get(workload)
        queue = self.queues.get(cq) if cq is not None else None
        return (None, False) if queue is None else (queue.preemptor, queue.sticky)

    def preemptors(self) -> set[ObjectKey]:
        """Every queue's preemptor: the heads a cycle considers first."""
        return {q.preemptor for q in self.queues.values() if q.preemptor is not None}

    def remove(self, workload: ObjectKey) -> None:
        cq = self.where.pop(workload, None)
        if cq is not None:
            self.queues[cq].remove(workload)

    def heads(self, active: Callable[[str], bool]) -> list[ObjectKey]:
        """One head per ClusterQueue that `active` accepts, in ClusterQueue name order."""
        out = []
        for name in sorted(n for n, q in self.queues.items() if q.active_count):
            if active(name):
                head = self.queues[name].head()
                if head is not None:
                    out.append(head)
        return out

    def take_retold(self) -> list[ClassRef]:
        """The classes parked since this was last asked, still parked: their waiting workloads'
        reasons are their head's now (`class_reason`), to be written though no cycle looked at them."""
        out: list[ClassRef] = []
        for name, queue in self.queues.items():
            out.extend(ClassRef(name, klass) for klass in queue.retold
                       if (bucket := queue.buckets.get(klass)) is not None and bucket.parked)
            queue.retold.clear()
        return out

    def class_of(self, workload: ObjectKey) -> ClassRef | None:
        cq = self.where.get(workload)
        return None if cq is None else ClassRef(cq, self.queues[cq].klass.get(workload))

    def members(self, ref: ClassRef) -> list[ObjectKey]:
        """The workloads waiting in a class now (none if it is gone)."""
        queue = self.queues.get(ref.cluster_queue)
        bucket = queue.buckets.get(ref.klass) if queue is not None else None
        return list(bucket.members) if bucket is not None else []

    def class_reason(self, workload: ObjectKey) -> str | None:
        cq = self.where.get(workload)
        return None if cq is None else self.queues[cq].class_reason(workload)

    def state_of(self, workload: ObjectKey) -> str | None:
        cq = self.where.get(workload)
        if cq is None:
            return None
        return "active" if self.queues[cq].is_active(workload) else "inadmissible"

    def repartition(self, partition: Callable[[ObjectKey], Hashable]) -> None:
        for queue in self.queues.values():
            queue.repartition(partition)
