"""The end-to-end stack for framework tests: the real gateway (gunicorn over TLS) registered with
the local cluster through the shipped webhook configurations, and the real kubectl.

Users submit as alice; the admin and the controller's service account are exempt (as in the
shipped policy), so the admin's set-up (queues) and the controller, which runs as its service
account with the shipped role, pass the gateway untouched, while the pods the local cluster's Job
and PyTorchJob controllers create still go through it.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from demo.kubectl import KUBECTL
from demo.stack import gateway_service
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import parse_nodes_file
from realcluster.cluster import RealCluster
from tests import clusters
from tests.localcluster_fixtures import SHARED_USERS, role_binding, service_account_kubeconfig
from webhook.serving.launch import RunningGateway, start_gateway

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "team1"
USER = "alice"
# Gang placement is not what these tests are about: the local cluster's default scheduler binds.
# The default allowedKinds hold: the shipped validating webhook never sends the Endpoints,
# EndpointSlices and Events the control plane writes (tests/manifests/test_gateway_webhook_scope.py).
# Each AppWrapper component is authorized against the cluster's RBAC (the default
# authorization.userRBACCheck), with SubjectAccessReviews the gateway asks as its service account.
POLICY = ("exempt: {users: [admin, system:serviceaccount:batchgate-system:batchgate-controller]}\n"
          "queues: {requireQueueFor: []}\n"
          "scheduling: {schedulerName: '', gang: false}\n")
NODES = "- name: node\n  count: 2\n  capacity: {cpu: '64', memory: 256Gi}\n"
SPEED = 20.0

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@dataclass
class Gateway:
    """The running gateway; `stop` and `start` it again on the same address (an outage)."""

    certs: Path
    args: tuple[str, ...]
    running: RunningGateway

    def stop(self) -> int:
        """Stop the gateway; its exit code."""
        return self.running.stop()

    def start(self) -> None:
        self.running = start_gateway(self.certs, *self.args, "--port", str(self.running.port))


@dataclass(frozen=True)
class Stack:
    cluster: LocalCluster | RealCluster
    kubectl: Kubectl
    gateway: Gateway
    controller_kubeconfig: Path  # the controller's service account (manifests/rbac/controller.yaml)

    def lasting(self, seconds: float) -> str:
        """A pod behaviour's duration that lasts `seconds` of wall-clock time on this cluster
        (the stand-in's clock runs SPEED times faster; the real control plane's at 1)."""
        return f"{seconds * self.cluster.speed:g}s"


def webhook_configurations(ca_bundle: str) -> str:
    """The shipped Mutating/ValidatingWebhookConfigurations (kustomize), with the real caBundle."""
    built = subprocess.run([KUBECTL, "kustomize", str(ROOT / "manifests" / "webhook")], capture_output=True,
                           text=True, check=True, timeout=60).stdout
    configs = [d for d in yaml.safe_load_all(built) if d and d["kind"].endswith("WebhookConfiguration")]
    for config in configs:
        for hook in config["webhooks"]:
            hook["clientConfig"]["caBundle"] = ca_bundle
    return yaml.safe_dump_all(configs)


@contextmanager
def running_stack(tmp: Path, *, policy_text: str = POLICY, nodes: str = NODES) -> Iterator[Stack]:
    """The cluster with the product's CRDs and roles, alice and bob holding the team role in
    NAMESPACE, then the gateway as its service account, registered through its Service."""
    certs = tmp / "gateway-certs"
    write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    policy = tmp / "policy.yaml"
    policy.write_text(policy_text)
    with clusters.cluster(tmp / "cluster", speed=SPEED, nodes=parse_nodes_file(nodes)) as (cluster, kubectl):
        def run(*args: str, input: str | None = None, check: bool = True,
                user: str = "admin") -> subprocess.CompletedProcess[str]:
            done = subprocess.run([kubectl.binary, "--kubeconfig", str(cluster.kubeconfig), "--context", user, *args],
                                  input=input, capture_output=True, text=True, timeout=30)
            if check and done.returncode != 0:
                raise AssertionError(f"kubectl {' '.join(args)} (as {user}): {done.stderr}")
            return done

        run("create", "namespace", NAMESPACE)
        run("label", "namespace", NAMESPACE, "mlbatch-team-namespace=true")  # a team namespace opts in
        run("apply", "-k", str(clusters.development_crds(cluster)))
        run("apply", "-k", str(ROOT / "manifests" / "rbac"))
        run("apply", "-f", "-", input=role_binding(NAMESPACE, "edit", SHARED_USERS) + "---\n"
            + role_binding(NAMESPACE, "batchgate-team", SHARED_USERS))
        identity = service_account_kubeconfig(cluster.kubeconfig, "batchgate-system", "batchgate-webhook",
                                              tmp / "gateway.kubeconfig")
        args = ("--workers", "1", "--threads", "4", "--policy-file", str(policy), "--audit-log", str(tmp / "audit.log"),
                "--kubeconfig", str(identity))
        gateway = Gateway(certs, args, start_gateway(certs, *args))
        try:
            run("apply", "-f", "-", input=gateway_service(f"{gateway.running.host}:{gateway.running.port}"))
            ca_bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
            run("apply", "-f", "-", input=webhook_configurations(ca_bundle))
            controller = service_account_kubeconfig(cluster.kubeconfig, "batchgate-system", "batchgate-controller",
                                                    tmp / "controller.kubeconfig")
            yield Stack(cluster, run, gateway, controller)
        finally:
            gateway.stop()


@contextmanager
def running_controller(stack: Stack) -> Iterator[Any]:
    """The real controller (no leader election) as its service account, synced; stopped after."""
    from tests.controller.cluster import started_controller

    yield from started_controller(stack.cluster, watch_timeout=5)


def submit(kubectl: Kubectl, obj: dict[str, Any]) -> str:
    """`kubectl apply` as the user; kubectl's one line of output."""
    return kubectl("apply", "-f", "-", input=yaml.safe_dump(obj), user=USER).stdout.strip()


def pods_env(kubectl: Kubectl, selector: str, count: int, timeout: float = 30.0,
             container: int = 0) -> dict[str, dict[str, str]]:
    """Wait for `count` pods matching `selector`, then read hostname and env with jsonpath:
    {hostname: {name: value}}.

    Only literal values (the Job controller's own JOB_COMPLETION_INDEX is a fieldRef). A loaded
    machine can stall the sped-up kubelets long enough for a pod to fail and be replaced; the
    replacement of an index must then carry exactly the same env as the pod it replaces.
    """
    jsonpath = '{range .items[*]}{.spec.hostname}{"\\t"}{.spec.containers[%d].env}{"\\n"}{end}' % container
    deadline = time.monotonic() + timeout
    while True:
        out = kubectl("get", "pods", "-n", NAMESPACE, "-l", selector, "-o", f"jsonpath={jsonpath}").stdout
        rows = [line.split("\t", 1) for line in out.splitlines() if line.strip()]
        by_host: dict[str, list[dict[str, str]]] = {}
        for host, env in rows:
            literal = {e["name"]: e["value"] for e in json.loads(env or "[]") if "value" in e}
            by_host.setdefault(host, []).append(literal)
        if len(by_host) >= count or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(by_host) == count, out
    for host, envs in by_host.items():
        assert all(env == envs[0] for env in envs), f"pods of {host} disagree: {envs}"
    return {host: envs[0] for host, envs in by_host.items()}
