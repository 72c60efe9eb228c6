"""Wires the runtime together: informers -> store -> one work queue per reconciler, gated by the Lease.

Informers run in every process, leader or not, so a standby's cache is warm when it takes over;
reconcile workers only act while this process leads, and on becoming leader every cached object
is offered to every reconciler once (as a controller's sources list everything when it starts),
so nothing that changed during the handover is missed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

from batchgate.clock import Clock
from batchgate.policy import DEFAULT_POLICY, Policy, PolicyError
from batchgate.policy_configmap import configmap_source, invalid_policy_event, policy_from_configmap, rejection
from batchgate.kinds import QUEUED
from controller.adapters.admission import AdmissionLoop
from controller.adapters.appwrappers import AppWrapperReconciler
from controller.adapters.events import COMPONENT as EVENTS_COMPONENT, EventRecorder
from controller.adapters.framework_objects import FrameworkObjectReconciler
from controller.adapters.gang import GangScheduler
from controller.adapters.informer import Informer
from controller.adapters.jobs import JobReconciler
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.leader import LeaderElector
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.queue_status import QueueStatusReconciler
from controller.adapters.ratelimit import TokenBucket
from controller.adapters.reconcile import ReconcileLoop, Reconciler
from controller.adapters.slack_queue import SlackQueueReconciler
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.leader_election import LEASE_NAME, LEASE_NAMESPACE, LeaseTiming
from controller.state.cache import Change, ObjectKey
from kubeapi.events import record_event
from kubeapi.listwatch import RELIST_SECONDS

log = logging.getLogger(__name__)


# Namespaced kinds follow --namespace; cluster-scoped ones are always watched cluster-wide.
WATCHED_KINDS = (*QUEUED, "Workload", "LocalQueue", "ClusterQueue", "ResourceFlavor",
                 "WorkloadPriorityClass", "PriorityClass", "Namespace")


@dataclass(frozen=True)
class ControllerOptions:
    namespace: str | None = None
    identity: str = "batchgate-controller"
    leader_elect: bool = True
    lease_namespace: str = LEASE_NAMESPACE
    lease_name: str = LEASE_NAME
    timing: LeaseTiming = LeaseTiming()
    workers: int = 2  # per reconciler
    watch_timeout: int = 300
    relist_every: float | None = RELIST_SECONDS
    """Seconds between full lists of each kind, which catch a change no watch event delivered."""
    policy_configmap: tuple[str, str] = ("batchgate-system", "batchgate-policy")


class Controller:
    def __init__(self, client: KubeClient, clock: Clock, options: ControllerOptions,
                 metrics: ControllerMetrics | None = None) -> None:
        self.client, self.clock, self.options = client, clock, options
        self.metrics = metrics or ControllerMetrics()
        self.store = SharedStore()
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(client, options.lease_namespace, options.lease_name, options.identity,
                                         clock=clock, timing=options.timing, on_started=self._on_leading,
                                         on_stopped=self._on_standby)
        self.writer = Writer(client, self.is_leader, on_conflict=self.metrics.status_conflicts.inc)
        self.events_client = client.with_limiter(
            TokenBucket(client.limiter.qps, client.limiter.burst, clock) if client.limiter is not None else None)
        self.recorder = EventRecorder(Writer(self.events_client, self.is_leader), clock, options.identity)
        self.jobs = JobReconciler(self.store, self.writer, self.recorder, clock)
        self.appwrappers = AppWrapperReconciler(self.store, self.writer, self.recorder, clock, client,
                                                lambda: self.policy, self.metrics, synced=self.ready)
        self.framework_objects = FrameworkObjectReconciler(client, self.store, self.writer, self.recorder)
        self.slack_queue = SlackQueueReconciler(self.store, self.writer, self.recorder, lambda: self.policy)

        def loop(name: str, reconciler: Reconciler[ObjectKey]) -> ReconcileLoop[ObjectKey]:
            return ReconcileLoop(name, reconciler, clock, self.is_leader, self.metrics, workers=options.workers)

        self.slack_loop = loop("slack-queue", self.slack_queue)
        self.loops = [loop("jobs", self.jobs), loop("appwrappers", self.appwrappers),
                      loop("framework-objects", self.framework_objects), self.slack_loop]
        self.admission = AdmissionLoop(self.store, self.writer, self.recorder, clock, self.metrics, self.is_leader,
                                       spare_capacity=client.spare_capacity,
                                       reserve=client.limiter.burst / 2 if client.limiter is not None else 0.0)
        self.queue_status = QueueStatusReconciler(self.store, self.writer, clock, self.admission.queue_statuses,
                                                  self.admission.has_spare, self.is_leader)
        def informer(kind: str, namespace: str | None = None, **kw: Any) -> Informer:
            return Informer(client, RESOURCES[kind], self.store, self._on_change, namespace=namespace,
                            watch_timeout=options.watch_timeout, clock=clock, relist_every=options.relist_every,
                            on_relist=lambda kind: self.metrics.relists.labels(kind).inc(),
                            on_missed=lambda kind, changes: self.metrics.missed_changes.labels(kind).inc(changes), **kw)

        self.informers = [informer(kind, options.namespace if RESOURCES[kind].namespaced else None)
                          for kind in WATCHED_KINDS]
        # Pods cluster-wide: the AppWrapper lifecycle counts the pods carrying its label, and gang
        # placement needs every bound pod's requests to know what is left on each node.
        self.informers += [informer("Pod"), informer("Node"), informer("PodGroup", options.namespace)]
        self.gang = GangScheduler(self.store, self.writer, self.recorder, clock, client, lambda: self.policy,
                                  self.is_leader, metrics=self.metrics)
        policy_ns, policy_name = options.policy_configmap
        self.informers.append(informer("ConfigMap", policy_ns, field_selector=f"metadata.name={policy_name}"))
        self.informers += self.framework_objects.informers(informer, options.namespace)
        self.policy: Policy = DEFAULT_POLICY
        self.change_listeners: list[Callable[[Change], None]] = [self.admission.on_change, self._on_policy,
                                                                self.gang.on_change]
        self._stop = threading.Event()

    def is_leader(self) -> bool:
        return self.elector.is_leader if self.elector is not None else True

    def _on_policy(self, change: Change) -> None:
        """A new policy ConfigMap, read as batchgate/policy_configmap.py says: absent, the built-in
        defaults; without its key or invalid, the last good policy kept, the error logged, counted
        and recorded as an Event on the ConfigMap."""
        namespace, name = self.options.policy_configmap
        if (change.key.kind, change.key.namespace, change.key.name) != ("ConfigMap", namespace, name):
            return
        try:
            self.policy = policy_from_configmap(change.new, namespace, name)
        except PolicyError as exc:
            error = rejection(exc, namespace, name)
            self.metrics.policy_errors.labels(configmap_source(namespace, name)).inc()
            log.error("invalid policy, keeping version %s: %s", self.policy.version, error)
            keeps = f"the controller keeps policy {self.policy.version}"
            record_event(self.events_client, invalid_policy_event(change.new, namespace, name, error, keeps,
                                                                  EVENTS_COMPONENT, self.clock.now()))
            return
        log.info("policy %s loaded from %s", self.policy.version, configmap_source(namespace, name))
        self.admission.apply_policy(self.policy)
        if self.policy.fault_tolerance.node_health.slack_cluster_queue:
            self.slack_loop.queue.add(
                ObjectKey("ClusterQueue", "", self.policy.fault_tolerance.node_health.slack_cluster_queue))

    def ready(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    def healthy(self) -> bool:
        return not self._stop.is_set() and all(i.alive() for i in self.informers)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()
        for loop in self.loops:
            loop.start()
        self.admission.start()
        self.queue_status.start()
        self.gang.start()
        if self.elector is not None:
            self.elector.start()
        else:
            self._on_leading()

    def stop(self) -> None:
        self._stop.set()
        if self.elector is not None:
            self.elector.stop(release=True)
        for loop in self.loops:
            loop.stop()
        self.queue_status.stop()
        self.admission.stop()
        self.gang.stop()
        for informer in self.informers:
            informer.stop()

    def wait_synced(self, timeout: float) -> bool:
        return all(i.synced.wait(timeout) for i in self.informers)

    def settled(self) -> bool:
        """No reconciler has a key ready or in work (keys delayed for a later look do not count)."""
        return all(loop.queue.settled() for loop in self.loops)

    @property
    def waiting_for_webhooks(self) -> int:
        """Keys whose writes wait for an unreachable admission webhook, over all reconcilers."""
        return sum(loop.webhook_outage.waiting for loop in self.loops)

    def _on_change(self, change: Change) -> None:
        for loop in self.loops:
            loop.enqueue(change)
        for listener in self.change_listeners:
            listener(change)

    def _on_leading(self) -> None:
        """Offer every cached object to every reconciler once, off the elector's thread (waiting for
        caches must not delay renewals)."""
        self.metrics.leader.set(1)

        def resync() -> None:
            for informer in self.informers:
                informer.synced.wait(30)
            for objects in self.store.snapshot().values():
                for key, obj in objects.items():
                    change = Change(key, "ADDED", None, obj)
                    for loop in self.loops:
                        loop.enqueue(change)
            self.admission.wake()
            self.gang.resync()

        threading.Thread(target=resync, name="leader-resync", daemon=True).start()

    def _on_standby(self) -> None:
        self.metrics.leader.set(0)
