"""Bring up what an admin would install: the cluster, the gateway, the controller, in that order.

Every step goes through the same doors as on a real cluster: CRDs, the policy ConfigMap and the
webhook configurations are applied with kubectl from the shipped manifests (the caBundle filled
in), the gateway and the controller are `batchgate webhook` / `batchgate controller` processes
reading the cluster through a kubeconfig. The only local shortcut is where the gateway Service
points: an annotation the local cluster reads instead of pod endpoints.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from batchgate.clock import Clock
from certs.authority import service_names, write_serving_files
from demo.kubectl import Kubectl
from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import NodeSpec
from localcluster.webhook_sources import ADDRESS_ANNOTATION
from webhook.serving.launch import REPO_ROOT, RunningGateway, start_gateway

MANIFESTS = REPO_ROOT / "manifests"
DEMO_MANIFESTS = Path(__file__).resolve().parent / "manifests"
SYSTEM_NAMESPACE = "batchgate-system"
GATEWAY_SERVICE = "batchgate-webhook"
CONTROLLER_USER = "batchgate-controller"
CONTROLLER_READY = re.compile(r"probes on http://(?P<address>\S+)")
READY_TIMEOUT_SECONDS = 30.0
READY_STREAK_SECONDS = 0.5

Say = Callable[[str], None]


def gateway_configurations(ca_bundle: str, kubectl: Kubectl) -> str:
    """The shipped Mutating/ValidatingWebhookConfigurations (kustomize build), caBundle filled in."""
    built = kubectl.run("kustomize", str(MANIFESTS / "webhook")).stdout
    configs = [d for d in yaml.safe_load_all(built) if d and d["kind"].endswith("WebhookConfiguration")]
    for config in configs:
        for hook in config["webhooks"]:
            hook["clientConfig"]["caBundle"] = ca_bundle
    return yaml.safe_dump_all(configs)


def gateway_service(address: str) -> str:
    """The shipped Service, annotated with where the gateway really listens on this machine."""
    documents = yaml.safe_load_all((MANIFESTS / "webhook" / "gateway.yaml").read_text())
    service = next(d for d in documents if d and d["kind"] == "Service")
    service["metadata"].setdefault("annotations", {})[ADDRESS_ANNOTATION] = address
    return yaml.safe_dump(service)


def kubeconfig_for(kubeconfig: Path, context: str, target: Path) -> Path:
    """A copy of the cluster's kubeconfig whose current context is `context` (the controller's)."""
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    config["current-context"] = context
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    target.chmod(0o600)
    return target


@dataclass
class Controller:
    """`batchgate controller` as a child process; its stderr is kept for error reports."""

    process: subprocess.Popen[bytes]
    log: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)


def start_controller(kubeconfig: Path) -> Controller:
    """Start `batchgate controller` and wait until its probes listen (it then elects itself)."""
    command = [sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", str(kubeconfig),
               "--metrics-address", "127.0.0.1", "--metrics-port", "0", "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    controller = Controller(process)
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace").rstrip()
            controller.log.append(line)
            if CONTROLLER_READY.search(line):
                ready.set()
        ready.set()

    threading.Thread(target=drain, name="controller-stderr", daemon=True).start()
    if not ready.wait(READY_TIMEOUT_SECONDS) or process.poll() is not None:
        controller.stop()
        raise RuntimeError("batchgate controller did not start:\n" + "\n".join(controller.log[-20:]))
    return controller


@dataclass
class Stack:
    """Everything the demo started; `stop()` ends it in reverse order."""

    workdir: Path
    cluster: LocalCluster
    kubectl: Kubectl
    gateway: RunningGateway | None = None
    controller: Controller | None = None

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
        if self.gateway is not None:
            self.gateway.stop()
        self.cluster.stop()


def start_cluster(workdir: Path, nodes: list[NodeSpec], speed: float) -> Stack:
    cluster = LocalCluster(workdir / "cluster", users_file=DEMO_MANIFESTS / "users.yaml", speed=speed,
                           controllers=DEFAULT_CONTROLLERS, nodes=nodes)
    cluster.start()
    return Stack(workdir, cluster, Kubectl(cluster.kubeconfig))


def wait_for_nodes(kubectl: Kubectl, count: int, timeout: float = READY_TIMEOUT_SECONDS) -> list[dict[str, Any]]:
    """The nodes, once the simulated kubelets have registered all of them."""
    deadline = time.monotonic() + timeout
    while True:
        nodes = kubectl.get_json("nodes")["items"]
        if len(nodes) >= count or time.monotonic() > deadline:
            return nodes
        time.sleep(0.2)


def wait_until_ready(gateway: RunningGateway, clock: Clock, timeout: float = READY_TIMEOUT_SECONDS) -> None:
    """Until /readyz says the policy is loaded (503 before) on fresh connections for READY_STREAK_SECONDS.

    Each gunicorn worker loads the policy on its own after fork and a connection lands on any of
    them, so one 200 proves little; a streak of them on new connections covers every worker.
    """
    deadline = clock.monotonic() + timeout
    streak_since: float | None = None
    while True:
        client = gateway.client()
        try:
            ready = client.request("GET", "/readyz")[0] == 200
        finally:
            client.close()
        now = clock.monotonic()
        streak_since = (streak_since or now) if ready else None
        if streak_since is not None and now - streak_since >= READY_STREAK_SECONDS:
            return
        if now > deadline:
            raise RuntimeError(f"the gateway loaded no policy within {timeout:.0f}s:\n"
                               + "\n".join(gateway.stderr_lines[-20:]))
        time.sleep(0.05)


def install_gateway(stack: Stack, clock: Clock, workers: str = "2") -> RunningGateway:
    """CRDs and the policy ConfigMap, then `batchgate webhook` reading it, then its registration."""
    kubectl = stack.kubectl
    kubectl.run("apply", "-k", str(MANIFESTS / "crds"))
    kubectl.run("create", "namespace", SYSTEM_NAMESPACE)
    kubectl.run("apply", "-k", str(MANIFESTS / "rbac"))  # service accounts and roles, the users' roles too
    kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "policy.yaml"))
    certs = stack.workdir / "gateway-certs"
    write_serving_files(certs, service_names(GATEWAY_SERVICE, SYSTEM_NAMESPACE), clock.now())
    gateway = start_gateway(certs, "--workers", workers, "--policy-configmap",
                            f"{SYSTEM_NAMESPACE}/batchgate-policy", "--kubeconfig", str(stack.cluster.kubeconfig),
                            "--audit-log", str(stack.workdir / "audit.log"))
    stack.gateway = gateway
    wait_until_ready(gateway, clock)
    kubectl.run("apply", "-f", "-", stdin=gateway_service(f"{gateway.host}:{gateway.port}"))
    ca_bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
    kubectl.run("apply", "-f", "-", stdin=gateway_configurations(ca_bundle, kubectl))
    return gateway


def install_controller(stack: Stack) -> Controller:
    """`batchgate controller` as its own service account (the policy exempts it from the gateway)."""
    kubeconfig = kubeconfig_for(stack.cluster.kubeconfig, CONTROLLER_USER, stack.workdir / "controller.kubeconfig")
    stack.controller = start_controller(kubeconfig)
    return stack.controller
