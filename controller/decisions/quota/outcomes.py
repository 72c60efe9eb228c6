"""What a quota admission cycle decides, as values with the reasons users will read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from batchgate.frozen import frozen

from controller.state.cache import ObjectKey
from controller.state.quota_state import FlavorProgress

FlavorResource = tuple[str, str]
QueueName = Literal["active", "inadmissible"]


@frozen
class Assignment:
    """Flavors per pod set and resource, and the quota they take (integer units)."""

    flavors: Mapping[str, Mapping[str, str]]  # pod set -> resource -> flavor
    usage: Mapping[FlavorResource, int]
    borrows: bool = False


@frozen
class Admit:
    workload: ObjectKey
    cluster_queue: str
    assignment: Assignment


@frozen
class PreemptionTarget:
    workload: ObjectKey
    cluster_queue: str
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing


@frozen
class Preempt:
    """Evict `targets` so that `preemptor` fits later; `reason` is the Preempted message."""

    preemptor: ObjectKey
    targets: tuple[PreemptionTarget, ...]
    reason: str


@frozen
class Requeue:
    """A head that was not admitted: where it waits now, and the message users see."""

    workload: ObjectKey
    queue: QueueName = "inadmissible"
    reason: str = ""
    preempting: bool = False  # it waits for the victims it preempted (Kueue's PendingPreemption)
    # nothing of its shape can get in until the queue is asked back (Kueue's requeue reasons NoFit
    # and PreemptionNoCandidates, which alone park equivalent workloads since v0.18)
    no_fit: bool = False


@dataclass(frozen=True)
class Evict:
    """Evict an admitted workload for a reason other than preemption (a stopped queue)."""

    workload: ObjectKey
    reason: str
    message: str


@frozen
class CycleResult:
    admit: tuple[Admit, ...] = ()
    preempt: tuple[Preempt, ...] = ()
    requeue: tuple[Requeue, ...] = ()
    # per ClusterQueue, heads whose preemption was skipped because another head took the same
    # capacity this cycle (Kueue's admission_cycle_preemption_skips metric)
    skipped_preemptions: Mapping[str, int] = field(default_factory=dict)
    # where flavor assignment resumes for each requeued workload (None: from the first flavor)
    flavor_progress: Mapping[ObjectKey, FlavorProgress | None] = field(default_factory=dict)
