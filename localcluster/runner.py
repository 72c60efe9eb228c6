"""`LocalCluster`: the API server on its own event loop in a background thread.

Tests, the demo and `batchgate cluster` all start it the same way: a work directory for the
CA, serving certificate and kubeconfig; port 0 for a free port; users from an optional file.
Controllers (scheduler, kubelets, workload controllers) are async callables started on the
cluster's loop once it listens; they reach the API over HTTPS with a system identity.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import functools
import logging
import ssl
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from localcluster import lifecycle, tls
from localcluster.apiserver import tokens
from localcluster.apiserver.server import ApiServer
from localcluster.authorization import RBAC, Authorizer
from localcluster.clock import ScaledClock, TimeSource
from localcluster.crd_registration import CrdRegistrar
from localcluster.garbage import Collector
from localcluster.rbac import bootstrap
from localcluster.resources import Registry
from localcluster.store import HISTORY_FRESH_SECONDS, Store
from localcluster.apiserver.webhook_sources import dispatcher
from localcluster.users import AUTHENTICATED, Authenticator, User, kubeconfig, load_users

log = logging.getLogger("localcluster")

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# As on a real cluster, the controller manager is not in system:masters (RBAC grants its rights
# there): a policy that exempts cluster admins must still see the pods its controllers create.
# Its own identity runs the shared informers; each component writes as itself, as
# kube-controller-manager's controllers do with --use-service-account-credentials.
CONTROLLER_USER = User(bootstrap.KUBE_CONTROLLER_MANAGER, bootstrap.KUBE_CONTROLLER_MANAGER, "", (AUTHENTICATED,))


def _component_user(component: str) -> User:
    namespace, account = bootstrap.component_account(component)
    return User(component, bootstrap.service_account_username(namespace, account), "",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED))


COMPONENT_USERS: dict[str, User] = {
    "kubelet": User("system:node:kubelets", "system:node:kubelets", "", (bootstrap.NODES_GROUP, AUTHENTICATED)),
    "default-scheduler": User(bootstrap.KUBE_SCHEDULER, bootstrap.KUBE_SCHEDULER, "", (AUTHENTICATED,)),
    **{name: _component_user(name) for name in (*bootstrap.CONTROLLER_RULES, *bootstrap.OPERATOR_ACCOUNTS)},
}
START_TIMEOUT = 30.0
# Every name a client dials the API server by: in-cluster clients (process pods) by the `kubernetes`
# Service's names, everyone else by loopback.
API_SERVER_NAMES = ["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local", "localhost", "127.0.0.1"]
CRDS_DIR = Path(__file__).resolve().parent / "crds"
SHUTDOWN_TIMEOUT = 2.0
KUBELET_DIR = "kubelet"  # under the work dir: process pods' volumes and container logs
KUBELET_SYNC = _dt.timedelta(seconds=1)
"""How often a process pod's Secret and ConfigMap volumes are brought in line with their objects:
a real kubelet's syncFrequency is 1 minute (plus its object cache), here 1 s so a change shows at
once; a test of what a pod does meanwhile sets the real order of magnitude."""


@dataclass(frozen=True)
class ControllerContext:
    """What a simulated controller gets: where the API is and who it is there."""

    url: str
    ca_file: Path
    token: str
    username: str
    speed: float
    clock: TimeSource
    workdir: Path
    webhook_addresses: Mapping[str, str] = field(default_factory=dict)
    nodes: tuple[Any, ...] = ()  # localcluster.sim.nodes.NodeSpec: what the simulated kubelets register
    run_images: tuple[str, ...] = ()  # pods of these images run as real processes (--run-image)
    tokens: Mapping[str, str] = field(default_factory=dict)  # component name -> its own token
    # Every node's InternalIP, where a real kube-apiserver dials kubelets: loopback there, so it
    # never sends traffic off this machine. Empty: each node has a private address of its own.
    node_address: str = ""
    kubelet_port: int = 0  # where the kubelets serve logs to a real kube-apiserver (0: no server)
    kubelet_sync: _dt.timedelta = KUBELET_SYNC  # how often process pods' Secret/ConfigMap volumes follow their objects


ControllerFactory = Callable[[ControllerContext], Awaitable[Any]]


class LocalCluster:
    def __init__(self, workdir: Path, port: int = 0, users_file: Path | None = None, speed: float = 1.0,
                 webhook_addresses: Mapping[str, str] | None = None,
                 controllers: Sequence[ControllerFactory] = (), nodes: Sequence[Any] = (),
                 run_images: Sequence[str] = (), authorization: str = RBAC,
                 record_requests: bool = False, kubelet_sync: _dt.timedelta = KUBELET_SYNC,
                 watch_history: float = HISTORY_FRESH_SECONDS) -> None:
        self.workdir = Path(workdir)
        self.kubelet_sync = kubelet_sync
        self.nodes = tuple(nodes)
        self.run_images = tuple(run_images)
        self.port = port
        self.speed = speed
        self.webhook_addresses = dict(webhook_addresses or {})
        self.controllers = list(controllers)
        self.clock = ScaledClock(speed)
        self.users = load_users(users_file)
        self.store = Store(self.clock.monotonic, watch_history)
        self.auth = Authenticator([*self.users, CONTROLLER_USER, *COMPONENT_USERS.values()], self.clock.now,
                                  functools.partial(tokens.still_bound, self.store))
        self.registry = Registry()
        # record_requests: every resource request's (user, verb, group, resource, subresource,
        # namespace) is counted in `self.authorizer.recorded`, for a least-privilege check.
        self.authorizer = Authorizer(self.store, authorization, record=record_requests)
        self.server = ApiServer(self.store, self.registry, self.clock, self.auth, authorizer=self.authorizer)
        self.server.pod_logs_dir = self.workdir / KUBELET_DIR / "logs"
        self.server.webhooks = dispatcher(self.store, self.webhook_addresses)
        self.url = ""
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "pki" / "serving.crt"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    # lifecycle

    def start(self) -> LocalCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        files = tls.self_signed(self.workdir / "pki", API_SERVER_NAMES, _dt.datetime.now(_dt.timezone.utc))
        self.ca_file = files.cert
        self._seed()
        self._thread = threading.Thread(target=self._serve, args=(files.cert, files.key), name="localcluster",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise RuntimeError("local cluster did not start in time")
        if self._error is not None:
            raise RuntimeError(f"local cluster failed to start: {self._error}") from self._error
        self._write_kubeconfig()
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._stopping is not None and loop.is_running():
            loop.call_soon_threadsafe(self._stopping.set)
        thread.join(timeout=15)
        self._loop = self._thread = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # access

    def token(self, user: str) -> str:
        return self.auth.tokens[user]

    # internals

    def _seed(self) -> None:
        rt = self.registry.lookup("", "v1", "namespaces")
        assert rt is not None
        for name in INITIAL_NAMESPACES:
            obj = lifecycle.prepare_create(rt, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                                           self.clock.now())
            self.store.put(rt.group_resource, obj)
        self.authorizer.seed(self.registry, self.clock.now())

    def _install_crds(self) -> None:
        """The CRDs the simulated controllers serve (localcluster/crds/), present from the start."""
        rt = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert rt is not None
        for path in sorted(CRDS_DIR.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            self.store.put(rt.group_resource, lifecycle.prepare_create(rt, crd, self.clock.now()))

    def _write_kubeconfig(self) -> None:
        tokens = {u.name: self.auth.tokens[u.name] for u in self.users}
        config = kubeconfig(self.url, self.ca_file.read_bytes(), tokens)
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _serve(self, cert: Path, key: Path) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            runner = loop.run_until_complete(self._startup(cert, key))
        except BaseException as exc:  # noqa: BLE001 - reported to the thread that called start()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_until_complete(self._wait_for_stop())
        finally:
            loop.run_until_complete(self._shutdown(runner))
            leftovers = asyncio.all_tasks(loop)  # keep-alive connections still being served
            for task in leftovers:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.close()

    async def _startup(self, cert: Path, key: Path) -> web.AppRunner:
        self._stopping = asyncio.Event()
        CrdRegistrar(self.store, self.registry, self.clock.now)
        self._install_crds()
        collector = Collector(self.store, self.registry, self.clock.now)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.server.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, handler_cancellation=True,
                               shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(cert), str(key))
        context.set_alpn_protocols(["http/1.1"])
        site = web.TCPSite(runner, "127.0.0.1", self.port, ssl_context=context, backlog=1024)
        await site.start()
        sockets = runner.addresses
        self.port = sockets[0][1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.server.address = f"127.0.0.1:{self.port}"
        self._tasks.append(asyncio.create_task(collector.run(), name="garbage-collector"))
        context_for = ControllerContext(self.url, self.ca_file, self.auth.tokens[CONTROLLER_USER.name],
                                        CONTROLLER_USER.username, self.speed, self.clock, self.workdir,
                                        self.webhook_addresses, self.nodes, self.run_images,
                                        {c: self.auth.tokens[u.name] for c, u in COMPONENT_USERS.items()},
                                        kubelet_sync=self.kubelet_sync)
        for factory in self.controllers:
            self._tasks.append(asyncio.create_task(_guarded(factory, context_for)))
        return runner

    async def _wait_for_stop(self) -> None:
        assert self._stopping is not None
        await self._stopping.wait()

    async def _shutdown(self, runner: web.AppRunner) -> None:
        self.store.close_watches()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await runner.shutdown()
        await runner.cleanup()
        if self.server.webhooks is not None:
            await self.server.webhooks.close()


async def _guarded(factory: ControllerFactory, context: ControllerContext) -> None:
    try:
        await factory(context)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - one broken controller must not take the API server down
        log.exception("controller %s stopped with an error", getattr(factory, "__name__", factory))
