"""The process kubelet: pods whose image is one of `--run-image` run as real local processes.

Per pod: a loopback IP of its own, its volumes written under `<workdir>/kubelet/pods/<uid>/`
(atomic `..data` swaps when a Secret or ConfigMap changes) and bind-mounted at their mountPaths
in a private mount namespace (`sandbox.py`), the service-account token from the TokenRequest
API, one process per container with the environment `sim.container_env` resolves, stdout and
stderr in the log files `kubectl logs` reads, probes, restarts with the crash-loop backoff, and
graceful deletion (preStop, SIGTERM, grace, SIGKILL of everything the container started).
Decisions are in `localcluster/sim/` (container_env, volumes, sandbox_layout, probes, process_pod); this module
only carries them out.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from localcluster.runtime.client import PODS, SERVICEACCOUNTS, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime import probing, volume_files
from localcluster.sim import probes as probe_rules
from localcluster.sim.container_env import ContainerConfigError, PodFacts, resolve, service_variables
from localcluster.sim.process_pod import ContainerRecord, after_exit, log_file, pod_status, CONFIG_ERROR
from localcluster.sim.sandbox_layout import BindMount, layout
from localcluster.sim.volumes import (
    SERVICE_ACCOUNT_TOKEN_SECONDS,
    MountError,
    Projection,
    automounts_token,
    mounts,
    project,
    service_account_projection,
)

log = logging.getLogger(__name__)
SANDBOX = Path(__file__).resolve().with_name("sandbox.py")
POD_SITE_TARGET = "/var/run/localcluster-pod-site"  # where each pod's own sitecustomize is mounted
POD_SITE = Path(__file__).resolve().with_name("pod_site") / "sitecustomize.py"
CHECKOUT = Path(__file__).resolve().parents[2]  # holds the packages in an editable install
IMAGE_ENV = (("PYTHONUNBUFFERED", "1"), ("PYTHONDONTWRITEBYTECODE", "1"))  # the product image's ENV (Dockerfile)
SYNC_WALL_SECONDS = 1.0  # how often a failed mount or container config is retried
SHUTDOWN_GRACE = dt.timedelta(seconds=5)  # when the cluster stops, each pod gets this long after SIGTERM
PRE_STOP_EXTRA = dt.timedelta(seconds=2)  # the kubelet's minimum grace left after a preStop hook
TOKEN_REFRESH = 0.8  # a token is renewed after this share of its lifetime, as the kubelet does


def entry_point() -> str | None:
    """This checkout's installed `batchgate` console script: next to the interpreter, else on PATH."""
    beside = Path(sys.executable).with_name("batchgate")
    return str(beside) if beside.exists() else shutil.which("batchgate")


def image_paths(program: str | None) -> tuple[str, ...]:
    """What the run image holds, wherever it lies on this machine: the interpreter (the virtualenv's
    and the real binary's directories, the base install with its standard library), the virtualenv
    with its packages, the checkout the packages are installed from (editable), and the program."""
    executable = Path(sys.executable)
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, str(executable.parent),
             str(executable.resolve().parent), str(CHECKOUT)}
    if program:
        paths.add(os.path.dirname(program))
    return tuple(sorted({os.path.abspath(p) for p in paths} | {os.path.realpath(p) for p in paths}))


class PodRuntime:
    """What every process pod shares: where the API is, the caches the kubelet reads, the clock."""

    def __init__(self, api: Api, api_url: str, ca_pem: bytes, root: Path, now: Callable[[], dt.datetime],
                 wall_seconds: Callable[[dt.timedelta], float], lookup: Callable[[str, str, str], Any],
                 remember: Callable[[dict[str, Any]], None], volume_sync: dt.timedelta) -> None:
        self.api = api
        parts = urlsplit(api_url)
        self.service_env = service_variables(parts.hostname or "127.0.0.1", parts.port or 443)
        self.ca_pem = ca_pem
        self.root = root
        self.now = now
        self.wall_seconds = wall_seconds
        self.lookup_object = lookup  # (resource plural, namespace, name) -> object or None
        self.remember = remember  # the kubelet's pod cache, after each status write
        self.volume_sync = volume_sync  # the kubelet's sync period for Secret and ConfigMap volumes
        self.entry_point = entry_point()
        self.image = image_paths(self.entry_point)

    def data(self, kind: str, namespace: str, name: str) -> dict[str, bytes] | None:
        """A ConfigMap's or Secret's keys as bytes (what volumes and env read); None if absent."""
        obj = self.lookup_object("configmaps" if kind == "ConfigMap" else "secrets", namespace, name)
        if obj is None:
            return None
        out: dict[str, bytes] = {}
        for key, value in (obj.get("data") or {}).items():
            out[key] = base64.b64decode(value) if kind == "Secret" else str(value).encode()
        for key, value in (obj.get("binaryData") or {}).items():
            out[key] = base64.b64decode(value)
        for key, value in (obj.get("stringData") or {}).items():
            out[key] = str(value).encode()
        return out


class PodProcesses:
    """One pod's containers as processes, from first sight until the pod is gone."""

    def __init__(self, runtime: PodRuntime, pod: dict[str, Any], node: str, pod_ip: str, host_ip: str,
                 allocatable: Mapping[str, str]) -> None:
        self.rt = runtime
        self.pod = pod
        self.node = node
        meta = pod["metadata"]
        self.namespace, self.name, self.uid = meta["namespace"], meta["name"], meta.get("uid", "")
        self.facts = PodFacts(pod_ip, host_ip, dict(allocatable))
        self.dir = runtime.root / "pods" / self.uid
        spec = pod.get("spec") or {}
        self.containers = list(spec.get("containers") or [])
        self.records = {c["name"]: ContainerRecord(c["name"], c.get("image", "")) for c in self.containers}
        self.procs: dict[str, asyncio.subprocess.Process] = {}
        self.envs: dict[str, dict[str, str]] = {}
        self.start_time = runtime.now()
        self.mounted = False
        self.stopping = False
        self.tokens: dict[tuple[str, int], tuple[str, dt.datetime]] = {}
        self.lock = asyncio.Lock()
        self.tasks: list[asyncio.Task[Any]] = []
        self.last_events: set[tuple[str, str]] = set()
        self.main = asyncio.create_task(self._run(), name=f"pod {self.namespace}/{self.name}")

    # status and events

    async def post(self) -> None:
        async with self.lock:
            status = pod_status(self.pod, [self.records[c["name"]] for c in self.containers],
                                start_time=self.start_time, host_ip=self.facts.host_ip, pod_ip=self.facts.pod_ip,
                                previous=self.pod.get("status") or {}, now=self.rt.now(), mounted=self.mounted)
            if all((self.pod.get("status") or {}).get(k) == v for k, v in status.items()):
                return
            try:
                patched = await ignore_gone(self.rt.api.patch(PODS.path(self.namespace, self.name, "status"),
                                                              {"status": status}))
            except (ApiError, aiohttp.ClientError, asyncio.TimeoutError) as err:
                # The pod's own task must live on; the status stays unposted until its next change.
                log.warning("pod %s/%s: status not posted: %s", self.namespace, self.name, err)
                return
            if patched is not None:
                self.pod = patched
                self.rt.remember(patched)

    async def event(self, kind: str, reason: str, message: str, once: bool = False) -> None:
        if once:
            if (reason, message) in self.last_events:
                return
            self.last_events.add((reason, message))
        await record(self.rt.api, self.pod, kind, reason, message, "kubelet", self.rt.now(), self.node)

    # volumes

    async def _token(self, audience: str, seconds: int) -> str:
        key = (audience, seconds)
        now = self.rt.now()
        held = self.tokens.get(key)
        if held and now < held[1]:
            return held[0]
        account = (self.pod.get("spec") or {}).get("serviceAccountName") or "default"
        body: dict[str, Any] = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"expirationSeconds": seconds,
                                         "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": self.name,
                                                            "uid": self.uid}}}
        if audience:
            body["spec"]["audiences"] = [audience]
        try:
            reply = await self.rt.api.create(SERVICEACCOUNTS.path(self.namespace, account, "token"), body)
        except ApiError as err:
            raise MountError("kube-api-access", f"failed to fetch token: {err.message}") from None
        token = reply["status"]["token"]
        self.tokens[key] = (token, now + dt.timedelta(seconds=seconds * TOKEN_REFRESH))
        return token

    async def _projections(self) -> list[Projection]:
        spec = self.pod.get("spec") or {}
        needed: dict[tuple[str, int], str] = {}
        for volume in spec.get("volumes") or []:
            for part in (volume.get("projected") or {}).get("sources") or []:
                sat = part.get("serviceAccountToken")
                if sat is not None:
                    key = (str(sat.get("audience") or ""), int(sat.get("expirationSeconds") or 3600))
                    needed[key] = await self._token(*key)
        out = [project(self.pod, v, self.facts, self.rt.data, lambda a, s: needed[(a, s)])
               for v in spec.get("volumes") or []]
        account = self.rt.lookup_object("serviceaccounts", self.namespace, spec.get("serviceAccountName") or "default")
        if automounts_token(self.pod, account):
            token = await self._token("", SERVICE_ACCOUNT_TOKEN_SECONDS)
            out.append(service_account_projection(self.pod, token, self.rt.ca_pem))
        return out

    async def _write_volumes(self) -> None:
        now = self.rt.now()
        for projection in await self._projections():
            volume_files.write(self.dir / "volumes" / projection.name, projection, now)

    async def _mount_until_ready(self) -> None:
        """Set the volumes up, retrying while a Secret or ConfigMap is missing (FailedMount)."""
        while True:
            try:
                await self._write_volumes()
                for c in self.containers:
                    mounts(self.pod, c, automounts_token(self.pod, None))
                self.mounted = True
                return
            except MountError as err:
                await self.post()
                await self.event("Warning", "FailedMount", str(err), once=True)
            await asyncio.sleep(SYNC_WALL_SECONDS)

    async def _refresh_volumes(self) -> None:
        """Keep Secret and ConfigMap volumes in step with their objects at the kubelet's periodic
        sync: a Secret made after the pod started (an optional volume) shows at the next one."""
        while not self.stopping:
            await asyncio.sleep(self.rt.wall_seconds(self.rt.volume_sync))
            try:
                await self._write_volumes()
            except MountError as err:  # the object went away: the files stay as they were
                await self.event("Warning", "FailedMount", str(err), once=True)

    # containers

    def _argv(self, container: dict[str, Any], argv: tuple[str, ...]) -> list[str]:
        if container.get("command"):
            return list(argv)
        return [self.rt.entry_point or "batchgate", *argv]

    def _base_env(self) -> list[tuple[str, str]]:
        path = os.environ.get("PATH", os.defpath)
        if self.rt.entry_point:
            path = f"{os.path.dirname(self.rt.entry_point)}:{path}"
        hostname = (self.pod.get("spec") or {}).get("hostname") or self.name
        return [("PATH", path), ("HOSTNAME", hostname), ("HOME", "/root"), *IMAGE_ENV]

    async def _start(self, container: dict[str, Any]) -> asyncio.subprocess.Process:
        name = container["name"]
        resolved = resolve(self.pod, container, self.facts, self.rt.service_env, self.rt.data, self._base_env())
        if resolved.skipped_keys:
            await self.event("Warning", "InvalidEnvironmentVariableNames",
                             f"Keys [{', '.join(resolved.skipped_keys)}] from the EnvFrom are not valid "
                             "environment variable names", once=True)
        plan = mounts(self.pod, container, automounts_token(self.pod, self.rt.lookup_object(
            "serviceaccounts", self.namespace, (self.pod.get("spec") or {}).get("serviceAccountName") or "default")))
        volumes = self.dir / "volumes"
        site = self.dir / "site"
        site.mkdir(parents=True, exist_ok=True)
        (site / "sitecustomize.py").write_text(POD_SITE.read_text().replace("{pod_ip}", self.facts.pod_ip))
        # The pod's sitecustomize at a fixed place rather than named under the kubelet's directory:
        # a pod volume at /tmp would hide that directory when the cluster's workdir lies under /tmp.
        binds = [BindMount(str(site), POD_SITE_TARGET, True)]
        binds += [BindMount(str(volumes / m.volume / m.sub_path if m.sub_path else volumes / m.volume), m.target,
                            m.read_only) for m in plan]
        env = resolved.env_map()
        existing = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{POD_SITE_TARGET}:{existing}" if existing else POD_SITE_TARGET
        spec = {
            "parent": os.getpid(),
            "argv": self._argv(container, resolved.argv),
            "env": env,
            "workingDir": container.get("workingDir") or "/",
            "mounts": [{"source": b.source, "target": b.target, "readOnly": b.read_only}
                       for b in layout(binds, self.rt.image)],
        }
        self.envs[name] = env
        attempt = self.records[name].restarts
        logfile = log_file(self.rt.root / "logs", self.pod, name, attempt)
        logfile.parent.mkdir(parents=True, exist_ok=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        spec_file = self.dir / f"{name}.{attempt}.json"
        spec_file.write_text(json.dumps(spec))
        with logfile.open("ab") as out:
            return await asyncio.create_subprocess_exec(sys.executable, "-I", str(SANDBOX), str(spec_file),
                                                        stdin=asyncio.subprocess.DEVNULL, stdout=out,
                                                        stderr=asyncio.subprocess.STDOUT, start_new_session=True)

    async def _container(self, container: dict[str, Any]) -> None:
        name = container["name"]
        policy = (self.pod.get("spec") or {}).get("restartPolicy") or "Always"
        while not self.stopping:
            try:
                proc = await self._start(container)
            except (ContainerConfigError, MountError) as err:
                self.records[name] = replace(self.records[name], waiting_reason=CONFIG_ERROR, waiting_message=str(err))
                await self.post()
                await self.event("Warning", "Failed", f"Error: {err}", once=True)
                await asyncio.sleep(SYNC_WALL_SECONDS)
                continue
            self.procs[name] = proc
            has_startup = container.get("startupProbe") is not None
            has_readiness = container.get("readinessProbe") is not None
            self.records[name] = replace(self.records[name], running_since=self.rt.now(), started=not has_startup,
                                         ready=not has_startup and not has_readiness, waiting_reason="",
                                         waiting_message="")
            await self.event("Normal", "Started", f"Started container {name}")
            await self.post()
            prober = asyncio.create_task(self._probe(container, proc))
            self.tasks.append(prober)
            code = await proc.wait()
            prober.cancel()
            await asyncio.gather(prober, return_exceptions=True)
            self.tasks.remove(prober)
            code = code if code >= 0 else 128 - code  # killed by signal N: 128+N, as a runtime reports
            outcome = after_exit(self.records[name], code, self.rt.now(), "Never" if self.stopping else policy,
                                 self.name, self.namespace, self.uid)
            self.records[name] = outcome.record
            await self.post()
            if outcome.at is None or self.stopping:
                return
            if outcome.record.waiting_reason == "CrashLoopBackOff":
                await self.event("Warning", "BackOff", f"Back-off restarting failed container {name} in pod "
                                 f"{self.name}_{self.namespace}({self.uid})")
            wait = outcome.at - self.rt.now()
            if wait > dt.timedelta(0):
                await asyncio.sleep(self.rt.wall_seconds(wait))
            self.records[name] = replace(self.records[name], restarts=self.records[name].restarts + 1)

    async def _probe(self, container: dict[str, Any], proc: asyncio.subprocess.Process) -> None:
        """Run the container's probes until it ends; a failed liveness or startup probe kills it."""
        name = container["name"]
        specs = {}
        for kind in probe_rules.KINDS:
            try:
                spec = probe_rules.probe_spec(container, kind, self.facts.pod_ip)
            except probe_rules.ProbeError as err:
                await self.event("Warning", "Unhealthy", probe_rules.failure_event(kind, str(err)), once=True)
                continue
            if spec is not None:
                specs[kind] = spec
        if not specs:
            return
        states = {kind: probe_rules.initial(kind) for kind in specs}
        started = self.rt.now()
        due = {kind: started + spec.initial_delay for kind, spec in specs.items()}
        while True:
            startup_done = "startup" not in specs or states["startup"].ok
            now = self.rt.now()
            for kind, spec in specs.items():
                if not probe_rules.active(kind, startup_done) or now < due[kind]:
                    continue
                due[kind] = now + spec.period
                ok, message = await probing.run(spec.action, spec.timeout.total_seconds(), proc.pid, self.envs[name])
                before = states[kind]
                states[kind] = probe_rules.record(spec, before, ok, message)
                if not ok:
                    await self.event("Warning", "Unhealthy", probe_rules.failure_event(kind, message))
                if kind in ("liveness", "startup") and not ok and states[kind].failures >= spec.failure_threshold:
                    await self.event("Normal", "Killing", probe_rules.kill_reason(kind, name))
                    await self._stop_process(proc, self._grace(None))
                    return
            record_ = self.records[name]
            ready = startup_done and ("readiness" not in specs or states["readiness"].ok)
            if (record_.started, record_.ready) != (startup_done, ready):
                self.records[name] = replace(record_, started=startup_done, ready=ready)
                await self.post()
            next_due = min(due.values())
            await asyncio.sleep(max(self.rt.wall_seconds(next_due - self.rt.now()), 0.05))

    # stopping

    def _grace(self, seconds: int | None) -> dt.timedelta:
        if seconds is None:
            seconds = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        return dt.timedelta(seconds=30 if seconds is None else max(int(seconds), 0))

    async def _stop_process(self, proc: asyncio.subprocess.Process, grace: dt.timedelta) -> None:
        """SIGTERM to the container's main process; after the grace period SIGKILL to all it started."""
        if proc.returncode is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), self.rt.wall_seconds(grace))
        except asyncio.TimeoutError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        await proc.wait()

    async def _pre_stop(self, container: dict[str, Any], proc: asyncio.subprocess.Process, grace: dt.timedelta) -> None:
        hook = ((container.get("lifecycle") or {}).get("preStop"))
        if not isinstance(hook, Mapping) or proc.returncode is not None:
            return
        try:
            action = probe_rules.handler_action(hook, container, self.facts.pod_ip, "preStop hook")
        except probe_rules.ProbeError as err:
            await self.event("Warning", "FailedPreStopHook", str(err))
            return
        ok, message = await probing.run(action, max(self.rt.wall_seconds(grace), 0.1), proc.pid,
                                        self.envs.get(container["name"], {}))
        if not ok:
            await self.event("Warning", "FailedPreStopHook", f"PreStopHook failed: {message}")

    async def terminate(self, grace_seconds: int | None) -> None:
        """Graceful deletion: preStop, SIGTERM, the grace period, SIGKILL; returns once all are gone."""
        self.stopping = True
        grace = self._grace(grace_seconds)
        deadline = self.rt.now() + grace
        self.main.cancel()
        await asyncio.gather(self.main, return_exceptions=True)

        async def stop(container: dict[str, Any]) -> None:
            proc = self.procs.get(container["name"])
            if proc is None or proc.returncode is not None:
                return
            await self.event("Normal", "Killing", f"Stopping container {container['name']}")
            await self._pre_stop(container, proc, grace)
            await self._stop_process(proc, max(deadline - self.rt.now(), PRE_STOP_EXTRA))

        await asyncio.gather(*(stop(c) for c in self.containers))
        for c in self.containers:
            proc = self.procs.get(c["name"])
            record_ = self.records[c["name"]]
            if proc is not None and record_.running_since is not None and proc.returncode is not None:
                code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
                self.records[c["name"]] = after_exit(record_, code, self.rt.now(), "Never", self.name,
                                                     self.namespace, self.uid).record
        await self.post()

    async def shutdown(self) -> None:
        """The cluster is stopping: SIGTERM, a short grace, SIGKILL; no status is written."""
        self.stopping = True
        self.main.cancel()
        await asyncio.gather(self.main, return_exceptions=True)
        await asyncio.gather(*(self._stop_process(p, SHUTDOWN_GRACE) for p in self.procs.values()))

    async def _run(self) -> None:
        try:
            await self.post()
            await self._mount_until_ready()
            self.tasks.append(asyncio.create_task(self._refresh_volumes()))
            await asyncio.gather(*(self._container(c) for c in self.containers))
        except asyncio.CancelledError:
            raise
        except Exception:  # one pod's failure must not stop the kubelet
            log.exception("process pod %s/%s failed", self.namespace, self.name)
        finally:
            for task in self.tasks:
                task.cancel()
