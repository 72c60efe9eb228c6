"""`RealCluster`: Kubernetes' own etcd, kube-apiserver, kube-controller-manager and kube-scheduler
(built by `realcluster.toolchain`) on loopback, with nodes whose kubelets are the local cluster's
(the product's pods run as real processes, every other pod simulated), and the workload operators
the stand-in simulates (PyTorchJob, RayCluster, RayJob) as clients of the real API server; or, with
`operators="upstream"`, KubeRay's operator and the training operator themselves (realcluster/operators.py).

It has what a real cluster enforces: RBAC and the Node authorizer, service-account tokens signed
by its own issuer, the default admission plugins (PodSecurity, ResourceQuota, the webhook ones),
users admin / alice / bob by bearer token; on request, kube-apiserver's audit log of every request
(`audit=True`, `read_audit`). It offers what `LocalCluster` offers (`kubeconfig`,
`url`, `ca_file`, `token`, `users`), so a test or the demo runs on either.

Services get cluster IPs from a loopback range of the cluster's own, and a kube-proxy of the
local cluster's runtime serves them (`localcluster/runtime/service_proxy.py`): kube-apiserver
reaches a webhook through its Service as on any cluster.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import logging
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from localcluster.clock import ScaledClock
from localcluster.rbac import bootstrap
from localcluster.runner import CRDS_DIR, KUBELET_SYNC, ControllerContext
from localcluster.users import User, kubeconfig, load_users
from realcluster import audit, toolchain
from realcluster.pki import COMPONENTS, KUBELET, Pki, write_pki
from realcluster.processes import Program, StartError, free_port, port_taken
from realcluster.setup import apply_objects, get_json, operator_objects, request_token

if TYPE_CHECKING:
    from realcluster.operators import Operators

log = logging.getLogger("realcluster")
READY_SECONDS = 60.0
NODES_READY_SECONDS = 60.0
SERVICE_ISSUER = "https://kubernetes.default.svc.cluster.local"
OPERATOR_TOKEN_SECONDS = 24 * 3600
# each stand-in operator (a component of localcluster's runtime) and the CRD it serves (localcluster/crds)
STANDIN_CRDS = {"pytorchjob-controller": "pytorchjobs.kubeflow.org", "raycluster-controller": "rayclusters.ray.io",
                "rayjob-controller": "rayjobs.ray.io"}


class RealClusterError(RuntimeError):
    """The real control plane cannot start; one line that names the fix."""


def service_range(rng: random.Random) -> ipaddress.IPv4Network:
    """A /24 of loopback for this cluster's Services, away from the process pods' 127.1.0.0/16,
    chosen at random so that clusters of concurrent runs do not share cluster IPs."""
    return ipaddress.IPv4Network(f"127.{rng.randrange(128, 255)}.{rng.randrange(0, 256)}.0/24")


class RealCluster:
    def __init__(self, workdir: Path | None = None, *, port: int = 0, users_file: Path | None = None,
                 nodes: Sequence[Any] = (), run_images: Sequence[str] = (),
                 binaries: Mapping[str, Path] | None = None, operators: bool | Literal["upstream"] = True,
                 audit: bool = False, kubelet_sync: dt.timedelta = KUBELET_SYNC) -> None:
        found = dict(binaries) if binaries is not None else toolchain.locate()
        if found is None:
            raise RealClusterError("the real control plane is not built: run `make test` or "
                                   "`.venv/bin/python -m realcluster.toolchain` (needs Go), or use the stand-in")
        self.binaries = found
        self.owns_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="batchgate-real-"))
        if port and port_taken(port):
            raise RealClusterError(f"port {port} on 127.0.0.1 is taken: pass another --port, or 0 for a free one")
        self.port = port or free_port()
        self.users: list[User] = load_users(users_file)
        self.nodes = tuple(nodes)
        self.run_images = tuple(run_images)
        # True: the stand-in operators; False: none; "upstream": KubeRay's and the training operator
        self.operators = operators
        self.kubelet_sync = kubelet_sync  # how often process pods' Secret/ConfigMap volumes follow their objects
        self.upstream: Operators | None = None
        self.standins = self._standins()
        # audit: kube-apiserver logs every request (level Metadata) in audit_dir, read by `read_audit`
        self.audit_dir = self.workdir / "audit" if audit else None
        self.services = service_range(random.SystemRandom())
        self.url = f"https://127.0.0.1:{self.port}"
        self.speed = 1.0  # its controllers run on real time; a pod's `runFor` is wall-clock seconds
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "pki" / "ca.crt"
        self.programs: dict[str, Program] = {}
        self.pki: Pki | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runtime: asyncio.Task[Any] | None = None

    # lifecycle

    def start(self) -> RealCluster:
        data = self.workdir / "etcd"
        if (data / "member").exists():
            raise RealClusterError(f"etcd data dir {data} is left from an earlier run that did not stop cleanly: "
                                   "remove it, or use another --workdir")
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self.pki = write_pki(self.workdir / "pki", self.users, str(self.services[1]),
                                 dt.datetime.now(dt.timezone.utc))
            self.ca_file = self.pki.ca_cert
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfigs()
            self._bootstrap()
            self._start_upstream_operators()
            self._start_controllers()
            self._start_runtime()
            self._wait_for_nodes()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.upstream is not None:
            self.upstream.stop()
        self._stop_runtime()
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            program = self.programs.pop(name, None)
            if program is not None:
                program.stop()
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RealCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def token(self, user: str) -> str:
        assert self.pki is not None
        return self.pki.tokens[user]

    def read_audit(self) -> audit.AuditLog:
        """The requests kube-apiserver has logged so far, each with its authorizer's decision."""
        if self.audit_dir is None:
            raise RealClusterError("this cluster keeps no audit log: start it with RealCluster(..., audit=True)")
        return audit.read_log(self.audit_dir)

    # the programs

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        argv = [str(self.binaries["etcd"]), "--name", "default", "--data-dir", str(self.workdir / "etcd"),
                "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", f"default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync=true", "--quota-backend-bytes", str(8 * 1024 ** 3), "--log-level", "warn"]
        self._run(Program("etcd", argv, self.workdir / "logs" / "etcd.log", f"{self.etcd_url}/health"))

    def restart_etcd(self) -> None:
        """Stop etcd and start it again on the same data and port (a fault the tests inject)."""
        program = self.programs["etcd"]
        program.stop()
        self._run(Program(program.name, program.argv, program.log, program.health_url))

    def _start_apiserver(self) -> None:
        pki = self.pki
        assert pki is not None
        argv = [str(self.binaries["kube-apiserver"]),
                "--etcd-servers", self.etcd_url,
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
                "--cert-dir", str(self.workdir / "apiserver"),
                "--tls-cert-file", str(pki.serving_cert), "--tls-private-key-file", str(pki.serving_key),
                "--client-ca-file", str(pki.ca_cert),
                "--token-auth-file", str(pki.token_file),
                "--authorization-mode", "Node,RBAC",
                "--service-account-issuer", SERVICE_ISSUER,
                "--service-account-key-file", str(pki.service_account_public),
                "--service-account-signing-key-file", str(pki.service_account_key),
                "--service-cluster-ip-range", str(self.services),
                "--allow-privileged=true", "--profiling=false",
                # kubectl logs: every node's InternalIP is loopback, its kubelet port the kubelet server's
                "--kubelet-preferred-address-types", "InternalIP",
                # the local cluster's runs submit in bursts (tests, benchmarks): as Kueue's runner does
                "--max-requests-inflight", "800", "--max-mutating-requests-inflight", "400"]
        if self.audit_dir is not None:
            argv += audit.apiserver_flags(self.audit_dir)
        self._run(Program("kube-apiserver", argv, self.workdir / "logs" / "kube-apiserver.log",
                          f"{self.url}/readyz", pki.ca_cert, pki.tokens["admin"]))

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port (a fault the tests inject)."""
        program = self.programs["kube-apiserver"]
        program.stop()
        self._run(Program(program.name, program.argv, program.log, program.health_url, program.ca_file,
                          program.token))

    def _start_controllers(self) -> None:
        pki = self.pki
        assert pki is not None
        manager, scheduler = free_port(), free_port()
        always = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
        self._run(Program("kube-controller-manager", [
            str(self.binaries["kube-controller-manager"]),
            "--kubeconfig", str(self._component_kubeconfig("kube-controller-manager")),
            "--bind-address", "127.0.0.1", "--secure-port", str(manager), always,
            "--root-ca-file", str(pki.ca_cert), "--service-account-private-key-file", str(pki.service_account_key),
            "--use-service-account-credentials=true", "--leader-elect=false",
            "--service-cluster-ip-range", str(self.services)],
            self.workdir / "logs" / "kube-controller-manager.log", f"https://127.0.0.1:{manager}/healthz"))
        self._run(Program("kube-scheduler", [
            str(self.binaries["kube-scheduler"]),
            "--kubeconfig", str(self._component_kubeconfig("kube-scheduler")),
            "--bind-address", "127.0.0.1", "--secure-port", str(scheduler), always, "--leader-elect=false"],
            self.workdir / "logs" / "kube-scheduler.log", f"https://127.0.0.1:{scheduler}/healthz"))

    def _run(self, program: Program) -> None:
        self.programs[program.name] = program.start()
        try:
            program.wait_ready(READY_SECONDS)
        except StartError as err:
            raise RealClusterError(str(err)) from None

    # identities and set-up

    def _write_kubeconfigs(self) -> None:
        assert self.pki is not None
        tokens = {u.name: self.pki.tokens[u.name] for u in self.users}
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig(self.url, self.ca_file.read_bytes(), tokens),
                                                  sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _component_kubeconfig(self, name: str) -> Path:
        assert self.pki is not None
        return self.write_kubeconfig(name, self.pki.tokens[name])

    def write_kubeconfig(self, name: str, token: str) -> Path:
        """A kubeconfig (mode 0600) for one identity of this cluster, for a program run beside it."""
        path = self.workdir / "components" / f"{name}.kubeconfig"
        path.parent.mkdir(parents=True, exist_ok=True)
        config = kubeconfig(self.url, self.ca_file.read_bytes(), {name: token}, current=name)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return path

    def _bootstrap(self) -> None:
        """What the runtime's identities need before they start: the kubelets' node role (the
        legacy binding of system:node to the nodes group, as the stand-in has it), the operators'
        namespaces, accounts and roles, and the CRDs the operators serve."""
        assert self.pki is not None
        objects: list[dict[str, Any]] = [
            bootstrap.cluster_role_binding("localcluster:kubelets", "system:node", [bootstrap.group(KUBELET.groups[0])])]
        objects += operator_objects(self.standins)
        objects += [yaml.safe_load((CRDS_DIR / f"{STANDIN_CRDS[c]}.yaml").read_text()) for c in self.standins]
        apply_objects(self.url, str(self.ca_file), self.pki.tokens["testbed"], objects)

    def _operator_tokens(self) -> dict[str, str]:
        assert self.pki is not None
        tokens = {KUBELET.name: self.pki.tokens[KUBELET.name]}
        for component in self.standins:
            namespace, account = bootstrap.OPERATOR_ACCOUNTS[component]
            tokens[component] = request_token(self.url, str(self.ca_file), self.pki.tokens["testbed"], namespace,
                                              account, OPERATOR_TOKEN_SECONDS)
        return tokens

    # the operators

    def _standins(self) -> list[str]:
        """The stand-in operators this cluster runs: all, none, or with the upstream operators
        those not built (PyTorchJobs stay with the stand-in while the training operator is not
        built). KubeRay's binary always runs its RayJob controller beside its RayCluster one (no
        flag turns it off), so under it RayJobs are KubeRay's too: the stand-in would fight it."""
        if self.operators is True:
            return list(STANDIN_CRDS)
        if self.operators is False:
            return []
        if self.operators != "upstream":
            raise RealClusterError(f"operators={self.operators!r}: expected True (the stand-ins), False (none) "
                                   "or 'upstream' (KubeRay's and the training operator, `make operators`)")
        from realcluster.operators import KUBERAY, TRAINING, Operators

        self.upstream = Operators(self)
        if not self.upstream.built(KUBERAY.program):
            raise RealClusterError("KubeRay's operator is not built: run `make operators` (needs Go 1.26+), "
                                   "or use the stand-in operators (operators=True)")
        return [] if self.upstream.built(TRAINING.program) else ["pytorchjob-controller"]

    def _start_upstream_operators(self) -> None:
        from realcluster.operators import TRAINING

        if self.upstream is None:
            return
        self.upstream.start_kuberay()
        if self.upstream.built(TRAINING.program):
            self.upstream.start_training_operator()

    # the runtime: kubelets, kube-proxy, the operators' stand-ins

    def _start_runtime(self) -> None:
        from localcluster.runtime.components import run_components
        from localcluster.runtime.kubelet_server import KubeletServer
        from localcluster.runtime.kubelets import Kubelets
        from localcluster.runtime.pytorchjob_controller import PyTorchJobController
        from localcluster.runtime.raycluster_controller import RayClusterController
        from localcluster.runtime.rayjob_controller import RayJobController
        from localcluster.runtime.service_proxy import ServiceProxy

        assert self.pki is not None
        kinds: list[Any] = [Kubelets, KubeletServer, ServiceProxy]
        standins = {"pytorchjob-controller": PyTorchJobController, "raycluster-controller": RayClusterController,
                    "rayjob-controller": RayJobController}
        kinds += [standins[c] for c in self.standins]
        context = ControllerContext(self.url, self.ca_file, self.pki.tokens["testbed"], "localcluster:testbed", 1.0,
                                    ScaledClock(1.0), self.workdir, {}, self.nodes, self.run_images,
                                    self._operator_tokens(), node_address="127.0.0.1", kubelet_port=free_port(),
                                    kubelet_sync=self.kubelet_sync)
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._runtime = loop.create_task(run_components(context, kinds), name="realcluster-runtime")
            loop.call_soon(ready.set)
            try:
                loop.run_until_complete(self._runtime)
            except asyncio.CancelledError:
                pass
            except Exception:  # noqa: BLE001 - reported; the control plane itself goes on
                log.exception("the local runtime stopped with an error")
            finally:
                loop.close()

        self._thread = threading.Thread(target=serve, name="realcluster-runtime", daemon=True)
        self._thread.start()
        ready.wait(10)

    def _stop_runtime(self) -> None:
        loop, thread, task = self._loop, self._thread, self._runtime
        if loop is not None and task is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(task.cancel)
            thread.join(timeout=30)
        self._loop = self._thread = self._runtime = None

    def _wait_for_nodes(self) -> None:
        """Every node registered and Ready, and the default service account made, before use."""
        assert self.pki is not None
        names = {spec.name for spec in self.nodes}
        deadline = time.monotonic() + NODES_READY_SECONDS
        while time.monotonic() < deadline:
            if nodes_ready(self.url, str(self.ca_file), self.pki.tokens["testbed"], names):
                return
            time.sleep(0.2)
        raise RealClusterError(f"nodes {sorted(names)} were not all Ready after {NODES_READY_SECONDS:.0f} s "
                               f"(logs: {self.workdir / 'logs'})")


def nodes_ready(url: str, ca_file: str, token: str, names: set[str]) -> bool:
    """Whether a cluster is ready for use: every node in `names` registered and Ready, and the
    default service account made. The same test for the stand-in (the benchmark compares both)."""
    nodes = get_json(url, ca_file, token, "/api/v1/nodes").get("items", [])
    ready = {n["metadata"]["name"] for n in nodes if any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in (n.get("status") or {}).get("conditions") or [])}
    account = get_json(url, ca_file, token, "/api/v1/namespaces/default/serviceaccounts/default", missing_ok=True)
    return names <= ready and bool(account)
