"""batchgate's scheduler: binds the pods that name the policy's scheduler, whole gangs at a time.

One loop thread (`CycleLoop`), woken by any Pod, Node, PodGroup or workload change (and every
`retry_every` seconds, so a gang waiting for capacity is retried even on a quiet cluster). Each
step, while this process leads:
1. makes the PodGroup each changed top-level workload needs (decisions/gang/podgroups.py);
2. decides placement over the cache (decisions/gang/placement.py) and applies it: POST
   `pods/binding` (a small pool of threads, so a 1,000-pod gang does not wait on one
   connection), an assumed `spec.nodeName` in the cache so the next step sees the node as used,
   Event `Scheduled`; for pods left Pending, PodScheduled=False/Unschedulable and Event
   `FailedScheduling`, written only when the message changes;
3. writes the status of every PodGroup whose pods changed or whose schedule timeout is due.
A bind refused with 409 (the pod was bound or is being deleted meanwhile) is not retried: the
pod is read again into the cache and the next step decides afresh.
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api.errors import FieldError
from batchgate.api.node import Node
from batchgate.api.objects import controller_owner, metadata
from batchgate.clock import Clock, format_time
from batchgate.policy import Policy
from batchgate.kinds import QUEUED
from controller.adapters.cycle_loop import CycleLoop
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES, ApiError, KubeClient
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.store import SharedStore
from controller.adapters.writer import NotLeader, Writer
from controller.decisions.gang import podgroups as pg
from controller.decisions.gang.completeness import Deactivate, never_complete
from controller.decisions.gang.placement import Bind, GroupKey, Unschedulable, place
from controller.decisions.gang.node_fit import PodInfo, parse_pod
from controller.decisions.jobs.workloads import workload_name
from controller.state.cache import Change, ObjectKey

log = logging.getLogger(__name__)
PODS, PODGROUPS, WORKLOADS = RESOURCES["Pod"], RESOURCES["PodGroup"], RESOURCES["Workload"]


BIND_WORKERS = 8
"""Concurrent POST pods/binding calls, so a 1,000-pod gang does not wait on one connection;
bounded because every bind spends the same client QPS as the reconcile workers."""
RETRY_EVERY_SECONDS = 5.0
"""How often a gang waiting for capacity is placed again on a quiet cluster, where no change
would wake the loop."""


class GangScheduler:
    def __init__(self, store: SharedStore, writer: Writer, recorder: EventRecorder, clock: Clock,
                 client: KubeClient, policy: Callable[[], Policy], is_leader: Callable[[], bool], *,
                 metrics: ControllerMetrics | None = None, bind_workers: int = BIND_WORKERS, retry_every: float = RETRY_EVERY_SECONDS) -> None:
        self.store, self.writer, self.recorder, self.clock = store, writer, recorder, clock
        self.client, self.policy, self.is_leader = client, policy, is_leader
        self.metrics = metrics or ControllerMetrics()
        self.retry_every = retry_every
        self._pool = ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._loop = CycleLoop("gang-scheduler", self._step_once, is_leader, wait=self._next_wait)
        self._lock = threading.Lock()
        self._dirty_jobs: set[ObjectKey] = set()
        self._dirty_groups: set[GroupKey] = set()
        self._due: dict[GroupKey, _dt.datetime] = {}
        self._parsed: dict[tuple[str, str, str], PodInfo | FieldError] = {}
        self._told: dict[str, str] = {}  # pod uid -> the FailedScheduling message last written

    # --- triggers -----------------------------------------------------------------------------

    def on_change(self, change: Change) -> None:
        kind = change.key.kind
        with self._lock:
            if kind in QUEUED:
                self._dirty_jobs.add(change.key)
            elif kind == "PodGroup":
                self._dirty_groups.add((change.key.namespace, change.key.name))
            elif kind == "Pod":
                obj = change.new or change.old or {}
                group = (metadata(obj).get("labels") or {}).get(keys.POD_GROUP_LABEL)
                if group:
                    self._dirty_groups.add((change.key.namespace, group))
            elif kind != "Node":
                return
        self.wake()

    def resync(self) -> None:
        """On becoming leader: every workload and PodGroup is looked at once."""
        with self._lock:
            for kind in QUEUED:
                self._dirty_jobs.update(ObjectKey(kind, *_ns_name(o)) for o in self.store.list(kind))
            self._dirty_groups.update(_ns_name(o) for o in self.store.list("PodGroup"))
        self.wake()

    def wake(self) -> None:
        self._loop.wake()

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _next_wait(self) -> float:
        """Until the next retry, or sooner if a PodGroup's schedule timeout falls due first."""
        due = min(self._due.values(), default=None)
        if due is None:
            return self.retry_every
        return min(self.retry_every, max(0.0, (due - self.clock.now()).total_seconds()))

    def _step_once(self) -> bool:
        self.step()
        return False  # the next step waits for a change, a retry or a due timeout

    # --- one step -----------------------------------------------------------------------------

    def step(self) -> None:
        with self._lock:
            jobs, self._dirty_jobs = self._dirty_jobs, set()
        for key in sorted(jobs):
            self._ensure_podgroup(key)
        raw_pods = self.store.list("Pod")
        pods = self._parse_pods(raw_pods)
        nodes = self._nodes()
        groups = self._groups()
        policy = self.policy()
        with self.metrics.placement_duration.time():
            decisions = place(pods, nodes, {k: g.spec for k, g in groups.items()}, policy.scheduling.scheduler_name)
        by_uid = {metadata(p).get("uid"): p for p in raw_pods}
        binds = [d for d in decisions if isinstance(d, Bind)]
        list(self._pool.map(lambda b: self._bind(b, by_uid[b.pod.uid]), binds))
        told = [(pod, d.message) for d in decisions if isinstance(d, Unschedulable) for pod in d.pods
                if self._told.get(pod.uid) != d.message]
        list(self._pool.map(lambda t: self._tell_unschedulable(by_uid[t[0].uid], t[1]), told))
        self._write_group_statuses(groups, self._parse_pods(self.store.list("Pod")), policy)

    def _parse_pods(self, raw_pods: list[Mapping[str, Any]]) -> list[PodInfo]:
        """Parsed once per (uid, resourceVersion, nodeName); a malformed pod of ours is told why once."""
        parsed, seen = [], set()
        scheduler = self.policy().scheduling.scheduler_name
        for raw in raw_pods:
            meta, spec = metadata(raw), raw.get("spec") or {}
            key = (str(meta.get("uid")), str(meta.get("resourceVersion")), str(spec.get("nodeName") or ""))
            seen.add(key)
            info = self._parsed.get(key)
            if info is None:
                try:
                    info = parse_pod(raw)
                except FieldError as exc:
                    info = exc
                self._parsed[key] = info
            if isinstance(info, FieldError):
                if spec.get("schedulerName") == scheduler and not spec.get("nodeName"):
                    message = f"invalid pod: {info}"
                    if self._told.get(str(meta.get("uid"))) != message:
                        self._tell_unschedulable(raw, message)
                continue
            parsed.append(info)
        for key in set(self._parsed) - seen:
            del self._parsed[key]
        uids = {key[0] for key in seen}
        for uid in set(self._told) - uids:
            del self._told[uid]
        return parsed

    def _nodes(self) -> list[Node]:
        nodes = []
        for raw in self.store.list("Node"):
            try:
                nodes.append(Node.from_dict(raw))
            except FieldError as exc:
                log.warning("node %s ignored: %s", metadata(raw).get("name"), exc)
        return nodes

    def _groups(self) -> dict[GroupKey, pg.PodGroupInfo]:
        groups = {}
        for raw in self.store.list("PodGroup"):
            try:
                info = pg.parse_podgroup(raw)
            except FieldError as exc:
                log.warning("PodGroup %s/%s ignored: %s", *_ns_name(raw), exc)
                continue
            groups[(info.namespace, info.name)] = info
        return groups

    # --- PodGroups ----------------------------------------------------------------------------

    def _ensure_podgroup(self, key: ObjectKey) -> None:
        job = self.store.get(key.kind, key.namespace, key.name)
        if job is None:
            return  # a deleted workload's PodGroup goes with it (owner reference)
        try:
            desired = pg.desired_podgroup(job, QUEUED[key.kind], self.policy().scheduling.gang_timeout)
        except pg.PodSetError as exc:
            log.info("%s: no PodGroup (%s)", key, exc)  # the job integration reports the bad template
            return
        if desired is None:
            return
        existing = self.store.get("PodGroup", key.namespace, key.name)
        try:
            if existing is None:
                created = self.writer.create(PODGROUPS, desired)
                self.store.assume("PodGroup", created)
                self.recorder.normal(job, "CreatedPodGroup",
                                     f"Created PodGroup {key.name} with minMember {desired['spec']['minMember']}")
            elif pg.owned_by(existing, job):
                patch = pg.spec_patch(existing, desired)
                if patch is not None:
                    self.store.assume("PodGroup", self.writer.patch(PODGROUPS, key.name, key.namespace, patch))
                    self.recorder.normal(job, "ResizedPodGroup",
                                         f"PodGroup {key.name} minMember is now {desired['spec']['minMember']}")
        except ApiError as exc:
            if not exc.already_exists:
                log.warning("%s: PodGroup write failed: %s", key, exc)
                with self._lock:
                    self._dirty_jobs.add(key)

    def _write_group_statuses(self, groups: Mapping[GroupKey, pg.PodGroupInfo], pods: list[PodInfo],
                              policy: Policy) -> None:
        now = self.clock.now()
        with self._lock:
            due = {k for k, t in self._due.items() if t <= now}
            dirty, self._dirty_groups = self._dirty_groups | due, set()
        by_group: dict[GroupKey, list[PodInfo]] = {}
        for pod in pods:
            if pod.group:
                by_group.setdefault((pod.namespace, pod.group), []).append(pod)
        timeout = policy.scheduling.gang_timeout
        for key in sorted(dirty):
            self._due.pop(key, None)
            info = groups.get(key)
            raw = self.store.get("PodGroup", *key)
            if info is None or raw is None:
                continue
            members = by_group.get(key, [])
            restartable = pg.redeploys(raw, self._owner(raw))
            decision = pg.decide_status(info, members, now, timeout, restartable=restartable)
            if decision.patch:
                self.writer.update_status(PODGROUPS, raw, lambda current: _status_patch(
                    current, members, now, timeout, restartable))
            if decision.warning is not None:
                self.recorder.warning(raw, *decision.warning)
                self.wake()  # retried now, and its timer starts again
            if decision.requeue_after is not None:
                self._due[key] = now + decision.requeue_after
            self._release_if_never_complete(info, raw, now)

    def _release_if_never_complete(self, info: pg.PodGroupInfo, raw: Mapping[str, Any], now: _dt.datetime) -> None:
        """A gang its workload can never complete: reported, and the workload deactivated (its quota released)."""
        for kind in QUEUED.values():
            job = self.store.get(kind.kind, info.namespace, info.name)
            if job is None:
                continue
            name = workload_name(kind, info.name, metadata(job).get("uid", ""))
            workload = self.store.get("Workload", info.namespace, name)
            decision = never_complete(info, job, kind, workload, now, ours=pg.owned_by(raw, job))
            if decision is None or workload is None:
                continue
            self.writer.update_status(WORKLOADS, workload, lambda current: _still(
                never_complete(info, job, kind, current, now, ours=False)))
            self.store.assume("Workload", self.writer.patch(WORKLOADS, name, info.namespace, decision.spec_patch))
            self.recorder.warning(raw, decision.reason, decision.message)
            self.recorder.warning(job, decision.reason, decision.message)

    def _owner(self, podgroup: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The cached workload that controls `podgroup`, if it is a kind we watch."""
        ref = controller_owner(podgroup)
        if ref is None or ref.get("kind") not in QUEUED:
            return None
        return self.store.get(str(ref["kind"]), _ns_name(podgroup)[0], str(ref.get("name") or ""))

    # --- applying placement -------------------------------------------------------------------

    def _bind(self, decision: Bind, raw: Mapping[str, Any]) -> None:
        pod = decision.pod
        if not self.is_leader():
            raise NotLeader("not the leader: bind refused")
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": decision.node}}
        try:
            self.client.request("POST", PODS.path(pod.namespace, pod.name, "binding"), body=body)
        except ApiError as exc:
            log.info("bind %s to %s refused (%s); reading it again", pod.key, decision.node, exc)
            self.metrics.pod_bindings.labels("refused").inc()
            self._reread(pod)
            return
        bound = {**raw, "spec": {**(raw.get("spec") or {}), "nodeName": decision.node}}
        self.store.assume("Pod", bound)
        self.metrics.pod_bindings.labels("bound").inc()
        self._told.pop(pod.uid, None)
        self.recorder.normal(raw, "Scheduled", decision.message)

    def _reread(self, pod: PodInfo) -> None:
        try:
            self.store.assume("Pod", self.client.get(PODS, pod.name, pod.namespace))
        except ApiError as exc:
            if not exc.not_found:
                log.warning("re-reading pod %s failed: %s", pod.key, exc)
        self.wake()

    def _tell_unschedulable(self, raw: Mapping[str, Any], message: str) -> None:
        """PodScheduled=False/Unschedulable with the message, and a FailedScheduling Event."""
        uid = str(metadata(raw).get("uid"))
        now = format_time(self.clock.now())

        def compute(current: Mapping[str, Any]) -> dict[str, Any] | None:
            if (current.get("spec") or {}).get("nodeName"):
                return None
            conditions = [c for c in (current.get("status") or {}).get("conditions") or []
                          if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                               "message": message, "lastProbeTime": None, "lastTransitionTime": now})
            return {"status": {"conditions": conditions}}

        try:
            self.writer.update_status(PODS, raw, compute)
        except ApiError as exc:
            if not exc.not_found:
                log.warning("pod %s: PodScheduled condition not written: %s", uid, exc)
            return
        self._told[uid] = message
        self.recorder.warning(raw, "FailedScheduling", message)


def _still(decision: Deactivate | None) -> Mapping[str, Any] | None:
    return decision.status_patch if decision is not None else None


def _status_patch(current: Mapping[str, Any], members: list[PodInfo], now: _dt.datetime,
                  timeout: _dt.timedelta, restartable: bool) -> dict[str, Any] | None:
    patch = pg.decide_status(pg.parse_podgroup(current), members, now, timeout, restartable=restartable).patch
    return {"status": patch} if patch else None


def _ns_name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = metadata(obj)
    return meta.get("namespace") or "", meta.get("name") or ""
