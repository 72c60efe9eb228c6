"""The job integration adapter: applies `reconcile_job` (`controller/decisions/jobs/integration.py`) to the cluster.

Each queued AppWrapper, Job, PyTorchJob, RayJob and RayCluster is reconciled by key when it or
its Workload changes; the decision comes from the cache, and each action value maps to one write
and one Event.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from batchgate.api.objects import controller_owner, metadata
from batchgate.clock import Clock, format_time
from batchgate.kinds import JOB, QUEUED, Kind
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES, ApiError
from controller.adapters.reconcile import DONE, Result
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.jobs import integration as ji
from controller.decisions.jobs.workloads import PriorityClasses, owner_kind, workload_name
from controller.state.cache import Change, ObjectKey

log = logging.getLogger(__name__)
WORKLOADS = RESOURCES["Workload"]


STATUS_ACTIONS = (ji.ReleaseQuota, ji.FinishWorkload, ji.SetReclaimablePods)
"""Actions that are one Workload /status patch, recomputed from the Workload read again on a conflict."""


class JobReconciler:
    def __init__(self, store: SharedStore, writer: Writer, recorder: EventRecorder, clock: Clock) -> None:
        self.store, self.writer, self.recorder, self.clock = store, writer, recorder, clock

    def keys_for(self, change: Change) -> list[ObjectKey]:
        """Which jobs a change concerns: the job itself, the owner of a Workload, or, when a priority
        class appears or changes, every queued job still without a Workload: one may have named it
        before it existed, and nothing else would look at that job again (Kueue retries it with backoff)."""
        if change.key.kind in QUEUED:
            return [change.key]
        if change.key.kind in ("WorkloadPriorityClass", "PriorityClass") and change.new is not None:
            return self._without_workload()
        if change.key.kind == "Workload":
            obj = change.new or change.old or {}
            ref = controller_owner(obj)
            if ref is not None and owner_kind(ref) is not None:
                return [ObjectKey(str(ref["kind"]), change.key.namespace, str(ref["name"]))]
        return []

    def _without_workload(self) -> list[ObjectKey]:
        out = []
        for kind in QUEUED.values():
            for job in self.store.list(kind.kind):
                meta = job["metadata"]
                namespace = meta.get("namespace") or ""
                name = workload_name(kind, str(meta.get("name")), meta.get("uid", ""))
                if self.store.get("Workload", namespace, name) is None:
                    out.append(ObjectKey(kind.kind, namespace, str(meta.get("name"))))
        return out

    def _classes(self) -> PriorityClasses:
        workload = {o["metadata"]["name"]: int(o.get("value") or 0) for o in self.store.list("WorkloadPriorityClass")}
        pod = {o["metadata"]["name"]: int(o.get("value") or 0) for o in self.store.list("PriorityClass")}
        default = next((o["metadata"]["name"] for o in self.store.list("PriorityClass") if o.get("globalDefault")), None)
        return PriorityClasses(workload, pod, default)

    def _decide(self, job: Mapping[str, Any], kind: Kind, workload: Mapping[str, Any] | None) -> list[ji.Action]:
        owner = None
        ref = controller_owner(job)
        if ref is not None and owner_kind(ref) is not None:
            owner = self.store.get(str(ref["kind"]), job["metadata"].get("namespace") or "", str(ref["name"]))
        flavors = {o["metadata"]["name"]: o for o in self.store.list("ResourceFlavor")}
        return ji.reconcile_job(job, kind, workload, owner=owner, classes=self._classes(), flavors=flavors,
                                now=format_time(self.clock.now()))

    def reconcile(self, key: ObjectKey) -> Result:
        kind = QUEUED.get(key.kind)
        job = self.store.get(key.kind, key.namespace, key.name) if kind is not None else None
        if kind is None or job is None:
            return DONE  # deleted: its Workload goes with it (ownerReference garbage collection)
        meta = metadata(job)
        workload = self.store.get("Workload", key.namespace, workload_name(kind, key.name, meta.get("uid", "")))
        for action in self._decide(job, kind, workload):
            self._apply(action, job, kind, workload)
        return DONE

    def _apply(self, action: ji.Action, job: Mapping[str, Any], kind: Kind,
               workload: Mapping[str, Any] | None) -> None:
        res = RESOURCES[kind.kind]
        if isinstance(action, ji.CreateWorkload):
            meta = action.workload["metadata"]
            try:
                created = self.writer.create(WORKLOADS, action.workload)
                self.store.assume("Workload", created)
            except ApiError as exc:
                if not exc.already_exists:
                    raise
            self.recorder.normal(job, action.reason, f"Created Workload: {meta['namespace']}/{meta['name']}")
        elif isinstance(action, ji.ReplaceWorkload):
            assert workload is not None
            self.writer.delete(WORKLOADS, action.old_name, job["metadata"]["namespace"], workload["metadata"].get("uid"))
            self.recorder.normal(job, action.reason, f"Deleted stale Workload {action.old_name}: the job changed")
        elif isinstance(action, ji.MoveWorkload):
            moved = self.writer.patch(WORKLOADS, action.workload_name, job["metadata"]["namespace"], action.spec_patch)
            self.store.assume("Workload", moved)
            self.recorder.normal(job, action.reason, action.message)
        elif isinstance(action, (ji.StartJob, ji.StopJob)):
            written = self.writer.replace(res, action.job)
            self.store.assume(kind.kind, written)
            self.recorder.normal(job, action.reason, action.message)
        elif isinstance(action, ji.RestoreJob):
            if kind is JOB and (job.get("status") or {}).get("startTime"):
                # Kubernetes lets a suspended Job's scheduling directives change only once it has not started.
                job = self.writer.update_status(res, job, lambda cur: {"status": {"startTime": None}}
                                                if (cur.get("status") or {}).get("startTime") else None) or job
                update = dict(action.job)
                update["metadata"] = {**update["metadata"], "resourceVersion": job["metadata"]["resourceVersion"]}
                written = self.writer.replace(res, update)
            else:
                written = self.writer.replace(res, action.job)
            self.store.assume(kind.kind, written)
        elif isinstance(action, STATUS_ACTIONS):
            assert workload is not None
            wanted = type(action)

            def recompute(current: Mapping[str, Any]) -> Mapping[str, Any] | None:
                again = self._decide(job, kind, current)
                return next((a.status_patch for a in again if isinstance(a, STATUS_ACTIONS) and type(a) is wanted), None)

            patched = self.writer.update_status(WORKLOADS, workload, recompute)
            if patched is not None:
                self.store.assume("Workload", patched)
                if isinstance(action, ji.FinishWorkload):  # told on the job only, as Kueue does: one Event, not two
                    self.recorder.normal(job, "FinishedWorkload", f"Workload finished: {action.message}")
                else:
                    self.recorder.normal(workload, action.reason, action.message)
        elif isinstance(action, ji.Invalid):
            self.recorder.warning(job, action.reason, action.message)
