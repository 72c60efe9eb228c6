"""Applies `controller/decisions/jobs/framework_objects.py` to the cluster: a framework Job's Service and MPI hostfile.

Jobs are already watched; Services and ConfigMaps labelled `batchgate.dev/framework` are watched
too (under their own cache kinds, apart from the policy ConfigMap's informer), so deleting the
Service a Job's pods need brings it back. What the cache lacks is looked up in the API before
anything is created: a user's own object of that name carries no label, and is still the user's.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api.objects import controller_owner
from batchgate.kinds import JOB
from controller.adapters.events import EventRecorder
from controller.adapters.informer import Informer
from controller.adapters.kube import RESOURCES, ApiError, KubeClient
from controller.adapters.reconcile import DONE, Result
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.jobs import framework_objects as fo
from controller.state.cache import Change, ObjectKey
from batchgate.frameworks import FrameworkError

log = logging.getLogger(__name__)

CACHE_KINDS: Mapping[str, str] = {"Service": "FrameworkService", "ConfigMap": "FrameworkConfigMap"}
"""The store kind each watched kind is cached under."""
_JOB_KINDS = {cache: kind for kind, cache in CACHE_KINDS.items()}


class FrameworkObjectReconciler:
    def __init__(self, client: KubeClient, store: SharedStore, writer: Writer, recorder: EventRecorder) -> None:
        self.client, self.store, self.writer, self.recorder = client, store, writer, recorder

    @staticmethod
    def informers(informer: Callable[..., Informer], namespace: str | None) -> list[Informer]:
        """The framework objects' informers, each made by `informer(kind, namespace, **options)`."""
        return [informer(kind, namespace, label_selector=keys.FRAMEWORK_LABEL, cache_kind=cache)
                for kind, cache in CACHE_KINDS.items()]

    @staticmethod
    def keys_for(change: Change) -> list[ObjectKey]:
        """A Job, or the Job that owns a changed (or deleted) framework Service or ConfigMap."""
        if change.key.kind == "Job":
            return [change.key]
        if change.key.kind in _JOB_KINDS:
            ref = controller_owner(change.new or change.old or {})
            if ref is not None and (ref.get("apiVersion"), ref.get("kind")) == (JOB.api_version, JOB.kind):
                return [ObjectKey("Job", change.key.namespace, str(ref.get("name")))]
        return []

    def reconcile(self, key: ObjectKey) -> Result:
        if key.kind != "Job":
            return DONE
        job = self.store.get("Job", key.namespace, key.name)
        if job is None:
            return DONE  # deleted: what it owns goes with it (ownerReference garbage collection)
        for action in fo.reconcile_framework_objects(job, self._observe(job)):
            self._apply(action, job)
        return DONE

    def _observe(self, job: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
        """The wanted objects' namesakes that exist: from the cache, else from the API."""
        try:
            wanted = fo.wanted_objects(job)
        except FrameworkError:
            return {}  # the decision reports the bad layout
        found: dict[tuple[str, str], Mapping[str, Any]] = {}
        for obj in wanted:
            kind, meta = obj["kind"], obj["metadata"]
            current = self.store.get(CACHE_KINDS[kind], meta["namespace"], meta["name"])
            if current is None:
                current = self._read(kind, meta["namespace"], meta["name"])
            if current is not None:
                found[(kind, meta["name"])] = current
        return found

    def _read(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.client.get(RESOURCES[kind], name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def _apply(self, action: fo.Action, job: Mapping[str, Any]) -> None:
        if isinstance(action, fo.CreateObject):
            kind = action.obj["kind"]
            # AlreadyExists (made since we looked) fails the reconcile; its retry sees whose it is.
            created = self.writer.create(RESOURCES[kind], action.obj)
            self.store.assume(CACHE_KINDS[kind], created)
            self.recorder.normal(job, action.reason, action.message)
        else:
            self.recorder.warning(job, action.reason, action.message)
