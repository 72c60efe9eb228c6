"""Per-ClusterQueue pending workloads: an ordered heap plus the inadmissible set.

Order is Kueue's: higher priority first, then the older queue-order timestamp (creation time;
a preempted workload keeps its place). The heap is lazy: removing a workload only forgets it,
and stale heap entries are dropped when they reach the top, so every operation is O(log n).
Parked (inadmissible) workloads wait outside the heap until a quota-freeing event moves them back.

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
from typing import Callable, Hashable

from controller.state.cache import ObjectKey

SortKey = tuple[int, _dt.datetime, str, ObjectKey]


def sort_key(priority: int, timestamp: _dt.datetime, workload: ObjectKey) -> SortKey:
    """Queue order; equal priority and time are ordered by `namespace/name`, the workload last."""
    return (-priority, timestamp, workload.namespaced_name, workload)


@dataclass
class ClusterQueuePending:
    """The queue of one ClusterQueue. `heap` holds sort keys (the workload last) with lazy deletion."""

    heap: list[SortKey] = field(default_factory=list)
    active: dict[ObjectKey, SortKey] = field(default_factory=dict)
    inadmissible: dict[ObjectKey, SortKey] = field(default_factory=dict)
    preemptor: ObjectKey | None = None  # the head that is waiting for its preemptions to complete
    sticky: bool = False  # whether the preemptor stays the head (BestEffortFIFO)
    # scheduling classes found not to fit since the parked workloads were last asked back (Kueue's
    # noFitSchedulingHashes; only filled with policy admission.schedulingEquivalenceHashing)
    no_fit: set[Hashable] = field(default_factory=set)

    def push(self, workload: ObjectKey, key: SortKey) -> None:
        self.inadmissible.pop(workload, None)
        if self.active.get(workload) == key:
            return
        self.active[workload] = key
        heapq.heappush(self.heap, key)

    def park(self, workload: ObjectKey) -> None:
        key = self.active.pop(workload, None) or self.inadmissible.get(workload)
        if key is not None:
            self.inadmissible[workload] = key

    def park_class(self, scheduling_class: Hashable, class_of: Callable[[ObjectKey], Hashable]) -> int:
        """A workload of `scheduling_class` did not fit: park every waiting one of that class, and
        remember it for arrivals (Kueue's handleInadmissibleHash). Returns how many were parked."""
        self.no_fit.add(scheduling_class)
        same = [w for w in self.active if class_of(w) == scheduling_class]
        for workload in same:
            self.inadmissible[workload] = self.active.pop(workload)
        return len(same)

    def remove(self, workload: ObjectKey) -> None:
        self.active.pop(workload, None)
        self.inadmissible.pop(workload, None)
        if self.preemptor == workload:
            self.preemptor = None

    def head(self) -> ObjectKey | None:
        if self.sticky and self.preemptor is not None and self.preemptor in self.active:
            return self.preemptor
        while self.heap:
            key = self.heap[0]
            if self.active.get(key[3]) == key:
                return key[3]
            heapq.heappop(self.heap)
        return None

    def unpark(self, eligible: Callable[[ObjectKey], bool]) -> list[ObjectKey]:
        """Move parked workloads that pass `eligible` back into the heap.

        A cohort's finish often moves back most of a queue: then the heap is rebuilt from the active
        workloads at once (linear, and rid of its stale entries) rather than pushed into one by one
        (parked workloads are older than most, so each push climbs the whole heap)."""
        moved = [w for w in self.inadmissible if eligible(w)]
        if len(moved) * 4 < len(self.active):
            for workload in moved:
                self.push(workload, self.inadmissible[workload])
            return moved
        for workload in moved:
            self.active[workload] = self.inadmissible.pop(workload)
        self.heap = list(self.active.values())
        heapq.heapify(self.heap)
        return moved

    def __contains__(self, workload: ObjectKey) -> bool:
        return workload in self.active or workload in self.inadmissible

    def __len__(self) -> int:
        return len(self.active) + len(self.inadmissible)


class PendingQueues:
    """All ClusterQueues' pending queues, keyed by ClusterQueue name."""

    def __init__(self) -> None:
        self.queues: dict[str, ClusterQueuePending] = {}
        self.where: dict[ObjectKey, str] = {}  # workload -> ClusterQueue whose queue holds it

    def queue(self, cq: str) -> ClusterQueuePending:
        return self.queues.setdefault(cq, ClusterQueuePending())

    def push(self, cq: str, workload: ObjectKey, key: SortKey) -> None:
        previous = self.where.get(workload)
        if previous is not None and previous != cq:
            self.queues[previous].remove(workload)
        self.where[workload] = cq
        self.queue(cq).push(workload, key)

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
        for name in sorted(n for n, q in self.queues.items() if q.active):
            if active(name):
                head = self.queues[name].head()
                if head is not None:
                    out.append(head)
        return out

    def state_of(self, workload: ObjectKey) -> str | None:
        cq = self.where.get(workload)
        if cq is None:
            return None
        return "inadmissible" if workload in self.queues[cq].inadmissible else "active"
