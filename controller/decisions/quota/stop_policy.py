"""Evictions a stopped queue asks for: `HoldAndDrain` on a ClusterQueue or a LocalQueue.

`Hold` only stops new admissions (the queue is inactive); `HoldAndDrain` also evicts what is
admitted. The evicted workloads keep their quota until their pods are gone, like preemption.
"""

from __future__ import annotations

from batchgate import keys
from controller.decisions.quota.outcomes import Evict
from controller.state.quota_state import QuotaState


def drain_evictions(state: QuotaState) -> list[Evict]:
    out = []
    candidates = (held for name in sorted(state.draining) for held in state.admitted_by_cq.get(name, {}).values())
    for held in sorted(candidates, key=lambda h: h.info.key.namespaced_name):
        key = held.info.key
        if held.evicted:
            continue
        cq = state.cluster_queues.get(held.cluster_queue)
        lq = state.local_queues.get((held.info.namespace, held.info.queue_name))
        if cq is not None and cq.stop_policy == "HoldAndDrain":
            out.append(Evict(key, keys.EVICTED_BY_CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped"))
        elif lq is not None and lq.stop_policy == "HoldAndDrain":
            out.append(Evict(key, keys.EVICTED_BY_LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped"))
    return out
