"""The AppWrapper lifecycle adapter: observes, asks `decisions/appwrapper/lifecycle`, and acts.

Per reconcile it reads the AppWrapper from the cache and parses it once into its typed state,
reads its labelled pods from the cache, and each recorded
component from the cache when the controller watches its kind anyway (Jobs, PyTorchJobs, Ray
kinds), else with a GET (upstream reads through its cache the same way and polls the rest); a
component the cache does not hold is looked up with a GET before it counts as missing. It
applies the returned Transition: finalizer patch, creates and deletes, one `/status` write with
conflict retry, Events, the phase metric, and returns when to look again. Any change of a labelled pod or
of a watched component requeues its AppWrapper.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api.appwrapper_status import AppWrapperState, read_appwrapper_state
from batchgate.api.objects import controller_owner, metadata
from batchgate.clock import Clock
from batchgate.policy import NodeHealth, Policy
from batchgate.kinds import APPWRAPPER, QUEUED
from controller.adapters.discovery import NoMatch, ResourceResolver
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.reconcile import DONE, Result
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.appwrapper.components import ComponentError, build_component
from controller.decisions.appwrapper.lifecycle import after_create, decide, managed_here
from controller.decisions.appwrapper.owners import failed_components
from controller.decisions.appwrapper.pods import count_pods, no_execute_nodes
from controller.decisions.appwrapper.timing import timing_for
from controller.decisions.appwrapper.transition import (
    AddFinalizer,
    ComponentState,
    CreateComponents,
    CreateOutcome,
    DeleteComponents,
    DeletePods,
    Observed,
    RemoveFinalizer,
    Transition,
    status_patch,
)
from controller.decisions.appwrapper.failure_policy import job_failure
from controller.state.cache import Change, ObjectKey

log = logging.getLogger(__name__)
AW = RESOURCES["AppWrapper"]
PODS = RESOURCES["Pod"]
# Phases where nothing is deployed yet, so the components need no look.
_NOTHING_DEPLOYED = (keys.PHASE_EMPTY, keys.PHASE_SUSPENDED, keys.PHASE_RESUMING)
_FINALIZER_ATTEMPTS = 5  # as the Writer's status retries: a conflict means one racing writer, rarely more
_WAIT_FOR_SYNC = _dt.timedelta(milliseconds=200)  # a first list takes well under a second; look again soon
# Component kinds the manager's informers already keep in the store (assumed right after creation).
_CACHED = {kind: RESOURCES[kind] for kind in QUEUED if kind != APPWRAPPER.kind}


class AppWrapperReconciler:
    def __init__(self, store: SharedStore, writer: Writer, recorder: EventRecorder, clock: Clock,
                 client: KubeClient, policy: Callable[[], Policy],
                 metrics: ControllerMetrics, synced: Callable[[], bool] = lambda: True) -> None:
        self.store, self.writer, self.recorder, self.clock = store, writer, recorder, clock
        self.client, self.policy, self.metrics = client, policy, metrics
        self.synced = synced
        self.resolver = ResourceResolver(client)

    @staticmethod
    def keys_for(change: Change) -> list[ObjectKey]:
        """An AppWrapper's own changes, a pod labelled with its name, a watched component it controls."""
        if change.key.kind == "AppWrapper":
            return [change.key]
        obj = change.new or change.old or {}
        if change.key.kind == "Pod":
            name = (metadata(obj).get("labels") or {}).get(keys.APPWRAPPER_LABEL)
            if name:
                return [ObjectKey("AppWrapper", change.key.namespace, name)]
        elif change.key.kind in _CACHED:
            ref = controller_owner(obj)
            if ref is not None and ref.get("kind") == "AppWrapper" and ref.get("name"):
                return [ObjectKey("AppWrapper", change.key.namespace, str(ref["name"]))]
        return []

    def reconcile(self, key: ObjectKey) -> Result:
        if not self.synced():
            # A cache still listing would show a running AppWrapper without its pods or Jobs.
            return Result(requeue_after=_WAIT_FOR_SYNC.total_seconds())
        wire = self.store.get("AppWrapper", key.namespace, key.name)
        if wire is None:
            return DONE
        aw = read_appwrapper_state(wire)
        if not managed_here(aw):
            return DONE
        policy = self.policy()
        timing = timing_for(aw.annotations, policy.fault_tolerance)
        observed = self._observe(aw, policy)
        step = decide(aw, observed, timing, self.clock.now())
        if step is None:
            return DONE
        creates = next((a for a in step.actions if isinstance(a, CreateComponents)), None)
        if creates is not None:
            if any(isinstance(a, AddFinalizer) for a in step.actions):  # before anything is deployed
                wire = self._finalizer(wire, add=True)
            before = aw.phase
            wire = self._write_status(wire, step, self.clock.now())
            self._entered(key, before, step)
            aw = read_appwrapper_state(wire)
            outcomes = self._create(aw, creates.indices, policy)
            step = after_create(aw, outcomes, timing, self.clock.now())
        return self._apply(key, wire, step)

    # --- observing ----------------------------------------------------------------------------

    def _pods(self, aw: AppWrapperState) -> list[Mapping[str, Any]]:
        return self.store.labelled("Pod", aw.namespace, keys.APPWRAPPER_LABEL, aw.name)

    def _observe(self, aw: AppWrapperState, policy: Policy) -> Observed:
        evicting = no_execute_nodes(self.store.list("Node"), policy.fault_tolerance.node_health.no_execute)
        labelled = self._pods(aw)
        pods = count_pods(labelled, evicting)
        if aw.phase in _NOTHING_DEPLOYED and not aw.deleting:
            return Observed({}, pods)
        states: dict[int, ComponentState] = {}
        # Failed pods are judged only after the components: read those from the API then, since a
        # deleted component's pods fail as they go, and its DELETED event may still be on the way.
        confirm = pods.failed > 0
        for index, component in enumerate(aw.components):
            if not component.name:
                continue
            try:
                resource = self.resolver.resolve(component.api_version, component.kind)
                obj = self._read(resource, component.name, aw.namespace, confirm=confirm)
            except NoMatch:  # nothing of a kind the server does not serve can exist
                obj = None
            states[index] = ComponentState(exists=False) if obj is None else ComponentState(
                exists=True, deleting=bool(metadata(obj).get("deletionTimestamp")), failure=job_failure(obj))
        return Observed(states, pods, failed_components(aw, labelled) if pods.failed else ())

    def _read(self, resource: Resource, name: str, namespace: str, confirm: bool = False) -> Mapping[str, Any] | None:
        """From the store for a watched kind, else (or with `confirm`) from the API; None only if the
        API says it does not exist.

        A store miss is confirmed by a GET: a cache that lags the API (a restart, a slow watch) must
        not turn into a MissingComponent failure, which is never retried (goal R5, appwrapper#416).
        """
        if _CACHED.get(resource.kind) == resource and not confirm:
            cached = self.store.get(resource.kind, namespace, name)
            if cached is not None:
                return cached
        try:
            return self.client.get(resource, name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    # --- acting -------------------------------------------------------------------------------

    def _create(self, aw: AppWrapperState, indices: tuple[int, ...], policy: Policy) -> tuple[CreateOutcome, ...]:
        """Create in order; the first error ends the round (the next reconcile tries again)."""
        outcomes: list[CreateOutcome] = []
        health = policy.fault_tolerance.node_health
        for index in indices:
            outcome = self._create_one(aw, index, health)
            outcomes.append(outcome)
            if outcome.error is not None:
                break
        return tuple(outcomes)

    def _create_one(self, aw: AppWrapperState, index: int, health: NodeHealth) -> CreateOutcome:
        try:
            obj = build_component(aw, index, health)
            resource = self.resolver.resolve(str(obj.get("apiVersion")), str(obj.get("kind")))
        except ComponentError as exc:
            return CreateOutcome(index, error=str(exc), fatal=exc.fatal)
        except NoMatch as exc:
            return CreateOutcome(index, error=str(exc), fatal=True)
        try:
            created = self.writer.create(resource, obj)
            if _CACHED.get(resource.kind) == resource:  # seen at once, though its ADDED event may lag
                self.store.assume(resource.kind, created)
            return CreateOutcome(index, name=str(created["metadata"]["name"]))
        except ApiError as exc:
            if exc.already_exists:
                return self._adopt(aw, index, resource, obj)
            # Invalid (422) cannot succeed on retry, nor can a refusal of the controller itself
            # (403: a team namespace without the controller's binding); anything else may be transient.
            return CreateOutcome(index, error=exc.message or str(exc), fatal=exc.status == 422,
                                 forbidden=exc.forbidden)

    def _adopt(self, aw: AppWrapperState, index: int, resource: Resource, obj: Mapping[str, Any]) -> CreateOutcome:
        """An existing object of the same name counts as created only if this AppWrapper controls it."""
        meta = metadata(obj)
        try:
            existing = self.client.get(resource, str(meta.get("name")), meta.get("namespace"))
        except ApiError as exc:
            return CreateOutcome(index, error=exc.message or str(exc), forbidden=exc.forbidden)
        ref = controller_owner(existing)
        if ref is None or ref.get("uid") != aw.uid:
            return CreateOutcome(index, error=f"resource {meta.get('name')} exists, but is not controlled by appwrapper",
                                 fatal=True)
        return CreateOutcome(index, name=str(meta.get("name")))

    def _apply(self, key: ObjectKey, wire: Mapping[str, Any], step: Transition) -> Result:
        now = self.clock.now()
        aw = read_appwrapper_state(wire)
        for action in step.actions:
            if isinstance(action, AddFinalizer):
                wire = self._finalizer(wire, add=True)
            elif isinstance(action, DeleteComponents):
                self._delete_components(aw, action)
            elif isinstance(action, DeletePods):
                for pod in self._pods(aw):
                    meta = metadata(pod)
                    self.writer.delete(PODS, str(meta.get("name")), meta.get("namespace"), grace_period_seconds=0)
        before = aw.phase
        written = self._write_status(wire, step, now)
        self._entered(key, before, step)
        for event in step.events:
            self.recorder.record(written, event.type, event.reason, event.message)
        if any(isinstance(a, RemoveFinalizer) for a in step.actions):
            self._finalizer(written, add=False)
        if step.requeue_after is None:
            return DONE
        return Result(requeue_after=max(step.requeue_after, _dt.timedelta(0)).total_seconds())

    def _entered(self, key: ObjectKey, before: str, step: Transition) -> None:
        """Count and log a phase change once it is written."""
        if step.phase != before:
            self.metrics.appwrapper_phase.labels(key.namespace, step.phase).inc()
            log.info("AppWrapper %s/%s: %s -> %s (%s)", key.namespace, key.name, before or "Empty", step.phase, step.why)

    def _write_status(self, wire: Mapping[str, Any], step: Transition, now: _dt.datetime) -> Mapping[str, Any]:
        written = self.writer.update_status(AW, wire, lambda current: status_patch(read_appwrapper_state(current), step, now))
        if written is None:
            return wire
        self.store.assume("AppWrapper", written)
        return written

    def _delete_components(self, aw: AppWrapperState, action: DeleteComponents) -> None:
        for index in action.indices:
            component = aw.components[index]
            try:
                resource = self.resolver.resolve(component.api_version, component.kind)
            except NoMatch:
                continue  # nothing of an unserved kind can exist
            self.writer.delete(resource, component.name, aw.namespace,
                               grace_period_seconds=0 if action.forced else None)

    def _finalizer(self, aw: Mapping[str, Any], *, add: bool) -> Mapping[str, Any]:
        """Add or remove our finalizer with a merge patch guarded by resourceVersion."""
        current = aw
        for attempt in range(_FINALIZER_ATTEMPTS):
            meta = metadata(current)
            finalizers = list(meta.get("finalizers") or [])
            has = keys.APPWRAPPER_FINALIZER in finalizers
            if has == add:
                return current
            finalizers = finalizers + [keys.APPWRAPPER_FINALIZER] if add else [f for f in finalizers if f != keys.APPWRAPPER_FINALIZER]
            try:
                written = self.writer.patch(AW, str(meta.get("name")), meta.get("namespace"), {
                    "metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}})
            except ApiError as exc:
                if exc.not_found and not add:
                    return current
                if not exc.conflict or attempt == _FINALIZER_ATTEMPTS - 1:
                    raise
                current = self.client.get(AW, str(meta.get("name")), meta.get("namespace"))
                continue
            if add:  # a removal may let the object go: its DELETED event must not meet a stale assumption
                self.store.assume("AppWrapper", written)
            return written
        return current
