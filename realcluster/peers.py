"""Kueue's manager and the AppWrapper controller (built by `python -m realcluster.toolchain --peers`)
run as local processes beside a `RealCluster`, installed the way upstream installs them.

What is installed is upstream's own: `kubectl kustomize` of each module's config/default, read from
the Go module cache (CRDs with their conversion webhooks, RBAC, the webhook configurations and
Service, the certificate Secret), less the Deployment that would run the manager in a pod and
Kueue's visibility APIService (an aggregated API that is no part of what is compared).

What a process outside a pod needs instead, and nothing else changed:
- its identity: a token of the service account upstream's Deployment runs as, so upstream's RBAC
  decides what it may do;
- its config: upstream's shipped config with leader election off, loopback ports, its cert dir
  and (Kueue) the integrations chosen;
- its webhooks: each manages its certificates as upstream does (cert-controller writes the Secret
  and injects the caBundle); the Secret's pair is copied into the cert dir, as kubelet's secret
  volume does in a pod, and the webhook Service carries the address annotation so that the
  cluster's kube-proxy (ServiceProxy) relays kube-apiserver's calls to the local port.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from batchgate.policy import FAIR_SHARING_STRATEGIES
from certs.authority import write_pair
from localcluster.sim.endpoints import ADDRESS_ANNOTATION
from realcluster import toolchain
from realcluster.cluster import RealCluster
from realcluster.processes import Program, StartError, free_port, listeners, port_taken
from realcluster.setup import SetupError, get_json, request_token, wait_established

READY_SECONDS = 180.0  # Kueue bootstraps its certificates before it serves; slow on a loaded machine
KUBECTL_SECONDS = 120.0
TOKEN_SECONDS = 24 * 3600
APPWRAPPER_WEBHOOK_PORT = 9443  # fixed in the AppWrapper controller's main.go, on every address: not configurable
# ... as is its webhook server's cert dir: controller-runtime's default under os.TempDir(), so the
# controller gets a TMPDIR of its own and its cert rotator is pointed at the same directory
SERVING_CERTS = Path("k8s-webhook-server") / "serving-certs"
KUEUE_INTEGRATIONS = ("batch/job", "workload.codeflare.dev/appwrapper")
NOT_INSTALLED = ("Deployment", "APIService", "ConfigMap")
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's where PyYAML has it: 7x faster


class PeerError(RuntimeError):
    """A peer cannot be installed or started; one line that names the fix."""


@dataclass(frozen=True)
class Layout:
    """Where upstream's install puts a peer: its namespace, service account, webhook Service,
    certificate Secret and config ConfigMap (names after kustomize's prefix)."""

    program: str
    namespace: str
    account: str
    service: str
    secret: str
    config_map: str
    kustomize: str = "config/default"  # the kustomization in the module that is upstream's install


KUEUE = Layout("kueue", "kueue-system", "kueue-controller-manager", "kueue-webhook-service",
               "kueue-webhook-server-cert", "kueue-manager-config")
APPWRAPPER = Layout("appwrapper", "appwrapper-system", "appwrapper-controller-manager", "appwrapper-webhook-service",
                    "appwrapper-webhook-server-cert", "appwrapper-operator-config")


@dataclass(frozen=True)
class Ports:
    webhook: int
    health: int
    metrics: int


# what to install and how to configure it: pure -----------------------------------------------------


def _find(objects: Sequence[Mapping[str, Any]], kind: str, name: str) -> Mapping[str, Any]:
    for obj in objects:
        if obj.get("kind") == kind and obj["metadata"]["name"] == name:
            return obj
    raise PeerError(f"upstream's install has no {kind} {name}: the peer's layout changed; update realcluster/peers.py")


def installed_objects(objects: Sequence[Mapping[str, Any]], layout: Layout, address: str) -> list[dict[str, Any]]:
    """Upstream's install less what runs the manager in a pod; its webhook Service routed to `address`."""
    _find(objects, "Service", layout.service)
    out: list[dict[str, Any]] = []
    for obj in objects:
        if obj.get("kind") in NOT_INSTALLED:
            continue
        copy = dict(obj)
        if obj.get("kind") == "Service" and obj["metadata"]["name"] == layout.service:
            meta = dict(obj["metadata"])
            meta["annotations"] = {**(meta.get("annotations") or {}), ADDRESS_ANNOTATION: address}
            copy["metadata"] = meta
        out.append(copy)
    return out


def webhook_configurations(objects: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(kind, name) of every webhook configuration in an install: removed when the peer stops,
    so that a stopped peer's failurePolicy Fail does not block the cluster."""
    return [(o["kind"], o["metadata"]["name"]) for o in objects
            if o.get("kind") in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]


def upstream_deployment(objects: Sequence[Mapping[str, Any]], layout: Layout) -> Mapping[str, Any]:
    """The Deployment that runs the manager in upstream's install."""
    deployments = [o for o in objects if o.get("kind") == "Deployment"
                   and o["metadata"].get("namespace") == layout.namespace]
    if len(deployments) != 1:
        raise PeerError(f"upstream's install has {len(deployments)} Deployments in {layout.namespace}, not 1: "
                        "the peer's layout changed; update realcluster/peers.py")
    return deployments[0]


def upstream_args(objects: Sequence[Mapping[str, Any]], layout: Layout) -> list[str]:
    """The manager's arguments in upstream's Deployment, less --config (a path inside the pod)."""
    container = upstream_deployment(objects, layout)["spec"]["template"]["spec"]["containers"][0]
    return [arg for arg in container.get("args") or [] if not arg.startswith("--config")]


def upstream_config(objects: Sequence[Mapping[str, Any]], layout: Layout) -> dict[str, Any]:
    """The config upstream ships in its ConfigMap (its one data key)."""
    data = _find(objects, "ConfigMap", layout.config_map).get("data") or {}
    if len(data) != 1:
        raise PeerError(f"ConfigMap {layout.config_map} of upstream's install has {len(data)} keys, not 1: "
                        "update realcluster/peers.py")
    return dict(yaml.safe_load(next(iter(data.values()))) or {})


def kueue_config(base: Mapping[str, Any], ports: Ports, cert_dir: Path, integrations: Iterable[str],
                 fair_sharing: bool = False, feature_gates: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """Upstream's Kueue config for a local process: leader election off, loopback ports, its cert
    dir, the chosen integrations (each one upstream ships), the visibility API off, fair sharing
    on (Kueue's v1beta2 config: a `fairSharing` block, with both preemption strategies) or off (no
    block, as upstream ships it), and any other feature gates asked for (Kueue refuses a gate it
    does not know, and the start says so)."""
    chosen = list(integrations)
    offered = list((base.get("integrations") or {}).get("frameworks") or [])
    unknown = [name for name in chosen if name not in offered]
    if unknown:
        raise PeerError(f"Kueue has no integration {', '.join(map(repr, unknown))}: choose from {', '.join(offered)}")
    config = dict(base)
    config["health"] = {**(base.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{ports.health}"}
    config["metrics"] = {**(base.get("metrics") or {}), "bindAddress": f"127.0.0.1:{ports.metrics}"}
    config["webhook"] = {**(base.get("webhook") or {}), "host": "127.0.0.1", "port": ports.webhook,
                         "certDir": str(cert_dir)}
    config["leaderElection"] = {**(base.get("leaderElection") or {}), "leaderElect": False}
    config["integrations"] = {**(base.get("integrations") or {}), "frameworks": chosen}
    config["featureGates"] = {**(base.get("featureGates") or {}), "VisibilityOnDemand": False, **(feature_gates or {})}
    config.pop("fairSharing", None)
    if fair_sharing:
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_STRATEGIES)}
    return config


def appwrapper_config(base: Mapping[str, Any], ports: Ports, cert_dir: Path) -> dict[str, Any]:
    """Upstream's AppWrapper operator config for a local process: leader election off, loopback
    ports, its cert dir, webhooks on. The controller reads it from its ConfigMap."""
    manager = dict(base.get("controllerManager") or {})
    manager["health"] = {**(manager.get("health") or {}), "bindAddress": f"127.0.0.1:{ports.health}"}
    manager["metrics"] = {**(manager.get("metrics") or {}), "bindAddress": f"127.0.0.1:{ports.metrics}"}
    manager["leaderElection"] = False
    return {**base, "controllerManager": manager, "webhooksEnabled": True,
            "certManagement": {**(base.get("certManagement") or {}), "certificateDir": str(cert_dir)}}


def config_map(layout: Layout, config: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": layout.config_map, "namespace": layout.namespace},
            "data": {"config.yaml": yaml.safe_dump(dict(config), sort_keys=False)}}


# running them ---------------------------------------------------------------------------------------


@dataclass
class RunningPeer:
    program: Program
    layout: Layout
    version: str
    ports: Ports


class Peers:
    """Starts peers on one RealCluster and stops them (and their webhook configurations) at exit.
    Give each peer its own cluster: its CRDs replace any other kueue.x-k8s.io ones there."""

    which = staticmethod(toolchain.peer_programs)  # the programs this runs (realcluster/operators.py: others)

    def __init__(self, cluster: RealCluster, binaries: Mapping[str, Path] | None = None,
                 cache: Path | None = None) -> None:
        self.cluster = cluster
        self.cache = cache or toolchain.cache_root()
        self.versions = toolchain.load_versions()
        self.programs = {p.name: p for p in self.which(self.versions)}
        found = dict(binaries) if binaries is not None else toolchain.locate(self.versions, self.cache, self.which)
        if found is None:
            raise PeerError("Kueue and the AppWrapper controller are not built: run `make peers` (needs Go 1.26+)")
        self.binaries = found
        self.workdir = cluster.workdir / "peers"
        self.running: dict[str, RunningPeer] = {}
        self.webhooks: list[tuple[str, str]] = []  # every one installed, removed at stop
        # its install, ports, integrations and feature gates
        self._kueue: tuple[list[dict[str, Any]], Ports, tuple[str, ...], dict[str, bool]] | None = None

    def __enter__(self) -> Peers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start_kueue(self, integrations: Iterable[str] = KUEUE_INTEGRATIONS, fair_sharing: bool = False,
                    feature_gates: Mapping[str, bool] | None = None) -> RunningPeer:
        objects = self.render(KUEUE)
        ports = Ports(free_port(), free_port(), free_port())
        self._kueue = (objects, ports, tuple(integrations), dict(feature_gates or {}))
        self._install(installed_objects(objects, KUEUE, f"127.0.0.1:{ports.webhook}"))
        return self._launch_kueue(fair_sharing)

    def restart_kueue(self, fair_sharing: bool) -> RunningPeer:
        """Kueue stopped and started again, installed as it was, with fair sharing on or off:
        Kueue reads its config once, at start."""
        if self._kueue is None or "kueue" not in self.running:
            raise PeerError("Kueue is not running: start it (Peers.start_kueue) before restarting it")
        self.running.pop("kueue").program.stop()
        return self._launch_kueue(fair_sharing)

    def _launch_kueue(self, fair_sharing: bool) -> RunningPeer:
        assert self._kueue is not None
        objects, ports, integrations, gates = self._kueue
        cert_dir = self.workdir / "kueue" / "certs"
        config = kueue_config(upstream_config(objects, KUEUE), ports, cert_dir, integrations, fair_sharing, gates)
        config_file = self.workdir / "kueue" / "config.yaml"
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(yaml.safe_dump(config, sort_keys=False))
        argv = [str(self.binaries["kueue"]), f"--config={config_file}", *upstream_args(objects, KUEUE),
                f"--kubeconfig={self._kubeconfig(KUEUE)}"]
        return self._start(KUEUE, argv, ports, cert_dir, {})

    def start_appwrapper(self) -> RunningPeer:
        if port_taken(APPWRAPPER_WEBHOOK_PORT, host="0.0.0.0"):
            held = ", ".join(listeners(APPWRAPPER_WEBHOOK_PORT)) or "a socket not listed"
            raise PeerError(f"port {APPWRAPPER_WEBHOOK_PORT} is taken ({held}): the AppWrapper controller always "
                            "serves its webhooks there on every address; stop what holds it (another AppWrapper "
                            "controller, or a stand-in cluster's webhook pod)")
        objects = self.render(APPWRAPPER)
        ports = Ports(APPWRAPPER_WEBHOOK_PORT, free_port(), free_port())
        tmp = self.workdir / "appwrapper" / "tmp"
        cert_dir = tmp / SERVING_CERTS
        config = appwrapper_config(upstream_config(objects, APPWRAPPER), ports, cert_dir)
        self._install([*installed_objects(objects, APPWRAPPER, f"127.0.0.1:{ports.webhook}"),
                       config_map(APPWRAPPER, config)])
        argv = [str(self.binaries["appwrapper"]), f"--config={APPWRAPPER.config_map}",
                *upstream_args(objects, APPWRAPPER), f"--kubeconfig={self._kubeconfig(APPWRAPPER)}"]
        return self._start(APPWRAPPER, argv, ports, cert_dir,
                           {"NAMESPACE": APPWRAPPER.namespace, "TMPDIR": str(tmp)})

    def stop(self) -> None:
        """Stop every peer, then remove every webhook configuration installed (also those of a peer
        that did not start): with failurePolicy Fail they would refuse the cluster's writes."""
        for name in list(self.running)[::-1]:
            self.running.pop(name).program.stop()
        while self.webhooks:
            kind, webhook = self.webhooks.pop()
            self._kubectl("delete", kind.lower(), webhook, "--ignore-not-found", "--wait=false")

    # steps

    def render(self, layout: Layout) -> list[dict[str, Any]]:
        """upstream's config/default, assembled by kustomize (in kubectl) from the module's source."""
        try:
            source = toolchain.module_source(self.programs[layout.program], self.cache)
        except toolchain.ToolchainError as err:
            raise PeerError(str(err)) from None
        out = self._kubectl("kustomize", str(source / layout.kustomize))
        return [doc for doc in yaml.load_all(out, Loader=SAFE_LOADER) if doc]

    def _install(self, install: Sequence[Mapping[str, Any]]) -> None:
        """Server-side apply, as a user installs it; every CRD Established before the peer starts.
        Sent as one JSON List: KubeRay's CRDs are 3 MB, which YAML takes minutes to write and read."""
        self.webhooks += webhook_configurations(install)
        self._kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                      input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(install)}))
        crds = [o for o in install if o["kind"] == "CustomResourceDefinition"]
        cluster = self.cluster
        try:
            wait_established(cluster.url, str(cluster.ca_file), cluster.token("admin"), crds)
        except SetupError as err:
            raise PeerError(str(err)) from None

    def _kubeconfig(self, layout: Layout) -> Path:
        """The peer acts as the service account upstream's Deployment runs as."""
        cluster = self.cluster
        try:
            token = request_token(cluster.url, str(cluster.ca_file), cluster.token("admin"), layout.namespace,
                                  layout.account, TOKEN_SECONDS)
        except SetupError as err:
            raise PeerError(f"no token for {layout.namespace}/{layout.account}: {err}") from None
        return cluster.write_kubeconfig(layout.program, token)

    def _start(self, layout: Layout, argv: list[str], ports: Ports, cert_dir: Path,
               env: Mapping[str, str]) -> RunningPeer:
        program = self.programs[layout.program]
        process = Program(layout.program, argv, self.cluster.workdir / "logs" / f"{layout.program}.log",
                          f"http://127.0.0.1:{ports.health}/readyz", env={**toolchain.without_cluster_env(), **env})
        peer = RunningPeer(process, layout, program.version, ports)
        self.running[layout.program] = peer
        process.start()
        try:
            if layout.secret:  # a peer without webhooks has no certificates to mount
                self._mount_certificates(process, layout, cert_dir)
            process.wait_ready(READY_SECONDS)
        except (StartError, SetupError) as err:
            raise PeerError(f"{layout.program} {program.version} did not start: {err}") from None
        return peer

    def _mount_certificates(self, process: Program, layout: Layout, cert_dir: Path) -> None:
        """Copy the pair the peer's cert-controller writes into its Secret to its cert dir, as
        kubelet's secret volume does in a pod; return when done or when the peer has exited."""
        cluster = self.cluster
        path = f"/api/v1/namespaces/{layout.namespace}/secrets/{layout.secret}"
        cert_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + READY_SECONDS
        while process.running() and time.monotonic() < deadline:
            data = get_json(cluster.url, str(cluster.ca_file), cluster.token("admin"), path, missing_ok=True).get(
                "data") or {}
            if data.get("tls.crt") and data.get("tls.key"):
                write_pair(cert_dir, base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"]))
                return
            time.sleep(0.2)

    def _kubectl(self, *args: str, input: str | None = None) -> str:
        cluster = self.cluster
        argv = [str(cluster.binaries["kubectl"]), "--kubeconfig", str(cluster.kubeconfig), "--context", "admin", *args]
        try:
            done = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=KUBECTL_SECONDS)
        except subprocess.TimeoutExpired:
            raise PeerError(f"kubectl {args[0]} took over {KUBECTL_SECONDS:.0f} s") from None
        if done.returncode != 0:
            why = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise PeerError(f"kubectl {' '.join(args[:2])} failed: {why}")
        return done.stdout

