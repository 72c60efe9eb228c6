"""Keeps the slack ClusterQueue's lending limits in step with unusable GPU capacity (docs/appwrapper.md, "Node health").

Any Node change, and any change of the slack ClusterQueue itself (an admin's edit, a new queue),
queues the one key; the reconcile reads both from the cache, asks
`decisions/appwrapper/node_health` what the limits should be, and replaces the ClusterQueue with
its resourceVersion, so a concurrent edit is a conflict retried with backoff rather than lost.
Each changed limit is an Event on the ClusterQueue, so `kubectl describe cq` tells the story.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Callable

from batchgate import keys
from batchgate.policy import Policy
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES
from controller.adapters.reconcile import DONE, Result
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.appwrapper.node_health import slack_lending_limits, unusable_total
from controller.state.cache import Change, ObjectKey

log = logging.getLogger(__name__)
CLUSTER_QUEUE = RESOURCES["ClusterQueue"]


class SlackQueueReconciler:
    def __init__(self, store: SharedStore, writer: Writer, recorder: EventRecorder,
                 policy: Callable[[], Policy]) -> None:
        self.store, self.writer, self.recorder, self.policy = store, writer, recorder, policy

    def _slack(self) -> str:
        return self.policy().fault_tolerance.node_health.slack_cluster_queue

    def keys_for(self, change: Change) -> list[ObjectKey]:
        name = self._slack()
        if not name or change.key.kind not in ("Node", "ClusterQueue"):
            return []
        if change.key.kind == "ClusterQueue" and change.key.name != name:
            return []
        return [ObjectKey("ClusterQueue", "", name)]

    def reconcile(self, key: ObjectKey) -> Result:
        if key.kind != "ClusterQueue" or not key.name or key.name != self._slack():
            return DONE
        cluster_queue = self.store.get("ClusterQueue", "", key.name)
        if cluster_queue is None:
            return DONE  # not created yet: its own ADDED event queues it again
        missing = unusable_total(self.store.list("Node"), self.policy().fault_tolerance.node_health)
        update = slack_lending_limits(cluster_queue, missing)
        if update is None:
            return DONE
        written = self.writer.replace(CLUSTER_QUEUE, update.cluster_queue)
        self.store.assume("ClusterQueue", written)
        for change in update.changes:
            message = change.describe(missing.get(change.resource, Decimal(0)))
            log.info("slack ClusterQueue %s: %s", key.name, message)
            self.recorder.record(written, "Normal", keys.EVENT_LENDING_LIMIT_UPDATED, message)
        return DONE
