"""Every simulated node's kubelet, in one component: registers the nodes, heartbeats (node Lease
in kube-node-lease plus Ready), and runs each bound pod through the timeline `sim.kubelet`
computes, patching pods/status and recording the kubelet's events. A node labelled
`localcluster.batchgate.dev/health=unreachable` has a silent kubelet; `=not-ready` posts
Ready=False but keeps its pods running, as a real kubelet with a broken network plugin does."""

from __future__ import annotations

import asyncio
import random
import datetime as dt
import logging
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import aiohttp

from localcluster.runner import KUBELET_DIR, ControllerContext
from localcluster.runtime.base import Controller, object_key
from localcluster.runtime.client import (
    CONFIGMAPS,
    LEASES,
    NODES,
    PODS,
    SECRETS,
    SERVICEACCOUNTS,
    Api,
    ApiError,
    ignore_gone,
)
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.pod_processes import PodProcesses, PodRuntime
from localcluster.sim import kubelet as timeline
from localcluster.sim import images
from localcluster.sim.endpoints import allocate_loopback
from localcluster.sim.process_pod import runs_as_processes
from localcluster.sim.nodes import (
    HEARTBEAT,
    LEASE_NAMESPACE,
    NodeSpec,
    kubelet_conditions,
    kubelet_health,
    lease,
    new_node,
)
from localcluster.sim.units import format_micro_time, parse_time

log = logging.getLogger(__name__)
STATUS_REPORT = dt.timedelta(minutes=1)  # Ready is re-posted at least this often even when unchanged
HEARTBEAT_BATCH = 25


class Kubelets(Controller):
    component = "kubelet"
    workers = 8

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.specs: list[NodeSpec] = list(ctx.nodes)
        self.pods = self.informer(PODS, self._on_pod)
        self.nodes = self.informer(NODES, self._on_node)
        self.ips: dict[str, dict[str, str]] = {}  # node -> pod uid -> ip
        self.run_images = ctx.run_images
        self.processes: dict[str, PodProcesses] = {}  # pod uid -> its running processes
        self.stopping: set[str] = set()  # pod uids being stopped gracefully
        self.loopback: dict[str, str] = {}  # pod uid -> loopback IP of a process pod
        self.loopback_start = random.SystemRandom().randrange(0, 255) * 256  # this cluster's block of 256
        self.runtime: PodRuntime | None = None
        if self.run_images:
            caches = {"configmaps": self.informer(CONFIGMAPS, lambda kind, obj: None),
                      "secrets": self.informer(SECRETS, lambda kind, obj: None),
                      "serviceaccounts": self.informer(SERVICEACCOUNTS, lambda kind, obj: None)}
            self.runtime = PodRuntime(api, ctx.url, Path(ctx.ca_file).read_bytes(), Path(ctx.workdir) / KUBELET_DIR,
                                      self.now, self.wall_seconds,
                                      lambda plural, ns, name: caches[plural].get(ns, name), self.pods.remember,
                                      ctx.kubelet_sync)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            uid = pod["metadata"].get("uid", "")
            if kind == "DELETED" or finished:  # its sandbox is gone: the address is free again
                self.ips.get(pod["spec"]["nodeName"], {}).pop(uid, None)
            if kind == "DELETED":
                self.loopback.pop(uid, None)
                running = self.processes.pop(uid, None)
                if running is not None and uid not in self.stopping:  # removed without the kubelet: kill
                    asyncio.get_running_loop().create_task(running.terminate(0))
                self.stopping.discard(uid)
            if kind != "DELETED":
                self.queue.add(object_key(pod))

    def _on_node(self, kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        for pod in self.pods.values():
            if (pod.get("spec") or {}).get("nodeName") == name:
                self.queue.add(object_key(pod))

    async def run(self) -> None:
        await self.register()
        heartbeats = asyncio.create_task(self.heartbeat_forever(), name="kubelet-heartbeats")
        try:
            await super().run()
        finally:
            heartbeats.cancel()
            await self._stop_all_processes()

    async def _stop_all_processes(self) -> None:
        """Processes never outlive the cluster: wait for them even if cancelled again meanwhile
        (each stop is bounded by its short shutdown grace), then let the cancellation go on."""
        stopping = asyncio.ensure_future(asyncio.gather(*(p.shutdown() for p in self.processes.values()),
                                                        return_exceptions=True))
        cancelled = False
        while not stopping.done():
            try:
                await asyncio.shield(stopping)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError

    async def register(self) -> None:
        now = self.now()
        for index, spec in enumerate(self.specs):
            node = new_node(spec, index, now, self.ctx.node_address, self.ctx.kubelet_port)
            try:
                try:
                    await self.api.create(NODES.path(), node)
                except ApiError as err:
                    if err.reason != "AlreadyExists":
                        raise
                stored = await self.api.patch(NODES.path(None, spec.name, "status"), {"status": node["status"]})
                await self._renew(stored, now)
            except ApiError as err:  # this node stays away; the others register
                log.error("kubelet on %s could not register: %s", spec.name, err)

    async def heartbeat_forever(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            due += self.wall_seconds(HEARTBEAT)
            await asyncio.sleep(max(due - loop.time(), 0))
            try:
                await self.heartbeat(self.now())
            except (ApiError, aiohttp.ClientError, asyncio.TimeoutError) as err:  # try again next beat
                log.warning("kubelet heartbeat failed: %s", err)

    async def heartbeat(self, now: dt.datetime) -> None:
        """Every live kubelet renews its Lease (and re-posts Ready when due), all at once."""
        nodes = [n for n in self.nodes.values() if kubelet_health(n) != "unreachable"]
        for i in range(0, len(nodes), HEARTBEAT_BATCH):
            await asyncio.gather(*(self._beat(node, now) for node in nodes[i:i + HEARTBEAT_BATCH]))

    async def _beat(self, node: dict[str, Any], now: dt.datetime) -> None:
        name = node["metadata"]["name"]
        health = kubelet_health(node)
        await self._renew(node, now)
        conditions = (node.get("status") or {}).get("conditions") or []
        ready: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
        want = "True" if health == "ok" else "False"
        beat = ready.get("lastHeartbeatTime")
        if ready.get("status") != want or not beat or now - parse_time(beat) >= STATUS_REPORT:
            body = {"status": {"conditions": kubelet_conditions(conditions, health == "ok", now)}}
            self.nodes.remember(await ignore_gone(self.api.patch(NODES.path(None, name, "status"), body)))

    async def _renew(self, node: dict[str, Any], now: dt.datetime) -> None:
        name = node["metadata"]["name"]
        path = LEASES.path(LEASE_NAMESPACE, name)
        try:
            await self.api.patch(path, {"spec": {"renewTime": format_micro_time(now), "holderIdentity": name}})
        except ApiError as err:
            if err.status != 404:
                raise
            await ignore_gone(self.api.create(LEASES.path(LEASE_NAMESPACE), lease(node, now)))

    def _pod_ip(self, node: dict[str, Any], pod: dict[str, Any]) -> str:
        current = (pod.get("status") or {}).get("podIP")
        taken = self.ips.setdefault(node["metadata"]["name"], {})
        if current:
            taken.setdefault(pod["metadata"].get("uid", ""), current)
            return current
        if (pod.get("spec") or {}).get("hostNetwork"):
            return _host_ip(node)
        cidr = ((node.get("spec") or {}).get("podCIDR") or "10.244.0.0/24").split("/")[0].rsplit(".", 1)[0]
        used = set(taken.values())
        address = next((f"{cidr}.{i}" for i in range(2, 255) if f"{cidr}.{i}" not in used), f"{cidr}.254")
        taken[pod["metadata"].get("uid", "")] = address
        return address

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        pod = self.pods.get(namespace, name)
        if pod is None or not (pod.get("spec") or {}).get("nodeName"):
            return None
        node = self.nodes.get("", pod["spec"]["nodeName"])
        if node is None or kubelet_health(node) == "unreachable":
            return None
        now = self.now()
        status = pod.get("status") or {}
        if self.runtime is not None and runs_as_processes(pod, self.run_images):
            await self._sync_processes(pod, node)
            return None
        if pod["metadata"].get("deletionTimestamp"):
            if status.get("phase") not in ("Succeeded", "Failed"):
                await self._write(pod, timeline.terminate(pod, now))
                for cs in status.get("containerStatuses") or []:
                    await record(self.api, pod, "Normal", "Killing", f"Stopping container {cs['name']}", self.component,
                                 now, node["metadata"]["name"])
            # Containers stopped: the kubelet's final delete (grace 0, this very pod) lets it go.
            final = {"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"].get("uid")}}
            await ignore_gone(self.api.delete(PODS.path(namespace, name), final))
            return None
        if status.get("phase") in ("Succeeded", "Failed") and status.get("startTime"):
            return None
        start = parse_time(status["startTime"]) if status.get("startTime") else now
        failure = images.pull_failure(pod, self.run_images, start, now)
        if failure is not None:
            await self._pull_failed(pod, failure, start, node, now)
            return failure.next_change - now
        view = timeline.observe(pod, start_time=start, host_ip=_host_ip(node), pod_ip=self._pod_ip(node, pod), now=now)
        if _differs(status, view.status):
            await self._write(pod, view.status)
            await self._events(pod, status, view, node["metadata"]["name"], now)
        return None if view.wake_at is None else view.wake_at - now

    async def _pull_failed(self, pod: dict[str, Any], failure: images.PullFailure, start: dt.datetime,
                           node: dict[str, Any], now: dt.datetime) -> None:
        """An image not in the local registry: the pod waits in ErrImagePull / ImagePullBackOff."""
        status = pod.get("status") or {}
        wanted = images.pull_status(pod, failure, start_time=start, host_ip=_host_ip(node), pod_ip=self._pod_ip(node, pod))
        if not _differs(status, wanted):
            return
        previous = images.previous_stage(status)
        await self._write(pod, wanted)
        if previous is None:
            meta = pod["metadata"]
            missing = sorted({str(c.get("image")) for c in pod["spec"].get("containers") or []
                              if c.get("name") in failure.errors})
            log.warning("pod %s/%s: image %s is not in the local registry, which holds only the run images %s: "
                        "fix the image (for example the manifests' kustomize images: entry)",
                        meta.get("namespace"), meta.get("name"), ", ".join(missing), ", ".join(self.run_images))
        for event in images.pull_events(pod, failure, previous):
            await record(self.api, pod, event.type, event.reason, event.message, self.component, now,
                         node["metadata"]["name"])

    async def _sync_processes(self, pod: dict[str, Any], node: dict[str, Any]) -> None:
        """A pod of a run image: start its processes once; on deletion stop them, then let it go."""
        assert self.runtime is not None
        meta = pod["metadata"]
        uid = meta.get("uid", "")
        running = self.processes.get(uid)
        if meta.get("deletionTimestamp"):
            if uid in self.stopping:
                return
            self.stopping.add(uid)
            asyncio.get_running_loop().create_task(self._stop_then_delete(pod, running))
            return
        if running is not None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        ip = (pod.get("status") or {}).get("podIP") or allocate_loopback(self.loopback.values(), self.loopback_start)
        self.loopback[uid] = ip
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        self.processes[uid] = PodProcesses(self.runtime, pod, node["metadata"]["name"], ip, _host_ip(node), allocatable)

    async def _stop_then_delete(self, pod: dict[str, Any], running: PodProcesses | None) -> None:
        """Graceful deletion: the pod object goes only after its processes have."""
        meta = pod["metadata"]
        try:
            if running is not None:
                await running.terminate(meta.get("deletionGracePeriodSeconds"))
            final = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta.get("uid")}}
            await ignore_gone(self.api.delete(PODS.path(meta["namespace"], meta["name"]), final))
        except Exception:  # noqa: BLE001 - logged; the pod stays terminating and the next sync retries
            log.exception("stopping process pod %s/%s failed", meta["namespace"], meta["name"])
            self.stopping.discard(meta.get("uid", ""))

    async def _write(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        patched = await ignore_gone(self.api.patch(PODS.path(meta["namespace"], meta["name"], "status"), {"status": status}))
        self.pods.remember(patched)

    async def _events(self, pod: dict[str, Any], old: dict[str, Any], view: timeline.KubeletView, host: str,
                      now: dt.datetime) -> None:
        if view.error:
            await record(self.api, pod, "Warning", "InvalidBehavior", view.status["message"], self.component, now, host)
            return
        before = {cs["name"]: cs for cs in old.get("containerStatuses") or []}
        for cs in view.status.get("containerStatuses") or []:
            prior = before.get(cs["name"], {})
            state, prior_state = cs.get("state") or {}, prior.get("state") or {}
            if "running" in state and ("running" not in prior_state or prior.get("restartCount") != cs.get("restartCount")):
                await record(self.api, pod, "Normal", "Started", f"Started container {cs['name']}", self.component, now, host)
            waiting = state.get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff" and (prior_state.get("waiting") or {}).get("reason") != "CrashLoopBackOff":
                meta = pod["metadata"]
                await record(self.api, pod, "Warning", "BackOff",
                             f"Back-off restarting failed container {cs['name']} in pod {meta['name']}_{meta['namespace']}"
                             f"({meta.get('uid', '')})", self.component, now, host)


def _differs(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return any(current.get(k) != v for k, v in wanted.items())


def _host_ip(node: dict[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return address["address"]
    return "10.0.0.1"
