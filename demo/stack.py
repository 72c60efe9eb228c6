"""Bring up the product as an admin installs it: the cluster, then `kubectl apply -k manifests/local`.

The cluster (Kubernetes' own control plane or the stand-in, as demo/kube.py chooses; the local
kubelets on both) runs the pods of the image manifests/local names as real processes, so the
gateway and the controller are the Deployments of the shipped manifests: the certificate keeper
makes the serving Secret and injects the caBundle, admission calls the gateway pods through their
Service, the controller elects a leader among its replicas. Helpers that start
a gateway process by hand (`gateway_configurations`, `gateway_service`, `wait_until_ready`) serve
the end-to-end tests that need a gateway outside the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from batchgate.clock import Clock
from demo.kube import Kube
from demo.kubectl import Kubectl
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import NodeSpec
from localcluster.apiserver.webhook_sources import ADDRESS_ANNOTATION
from realcluster.cluster import RealCluster
from webhook.serving.launch import REPO_ROOT, RunningGateway

MANIFESTS = REPO_ROOT / "manifests"
LOCAL_OVERLAY = MANIFESTS / "local"
DEMO_MANIFESTS = Path(__file__).resolve().parent / "manifests"
SYSTEM_NAMESPACE = "batchgate-system"
GATEWAY_SERVICE = "batchgate-webhook"
READY_TIMEOUT_SECONDS = 30.0
INSTALL_TIMEOUT_SECONDS = 120.0
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
class Stack:
    """Everything the demo started; `stop()` ends it in reverse order."""

    workdir: Path
    kube: Kube
    cluster: LocalCluster | RealCluster
    kubectl: Kubectl

    def stop(self) -> None:
        """The cluster stops every pod process (the gateway's and the controller's) with it."""
        self.cluster.stop()


def start_cluster(workdir: Path, kube: Kube, nodes: list[NodeSpec], speed: float) -> Stack:
    """The demo's users and nodes on the chosen Kubernetes, running the product's image as pods."""
    cluster, kubectl = kube.make(workdir / "cluster", users_file=DEMO_MANIFESTS / "users.yaml", nodes=nodes,
                                 run_images=[local_image()], speed=speed)
    cluster.start()
    return Stack(workdir, kube, cluster, kubectl)


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


def local_image() -> str:
    """The image manifests/local names (its kustomize `images:`, the one place it is set)."""
    kustomization = yaml.safe_load((LOCAL_OVERLAY / "kustomization.yaml").read_text())
    image = kustomization["images"][0]
    return f"{image['newName']}:{image['newTag']}"


def product_status(kubectl: Kubectl) -> tuple[bool, str]:
    """Whether every product pod is Ready and every webhook configuration carries a caBundle,
    else what is still missing (for the error when it never happens)."""
    pods = kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE)["items"]
    deployments = kubectl.get_json("deployments", "-n", SYSTEM_NAMESPACE)["items"]
    waiting = [f"deployment/{d['metadata']['name']} {d.get('status', {}).get('readyReplicas', 0)}/"
               f"{d['spec'].get('replicas', 1)} ready" for d in deployments
               if d.get("status", {}).get("readyReplicas", 0) < d["spec"].get("replicas", 1)]
    waiting += [f"pod/{p['metadata']['name']} not Ready ({p.get('status', {}).get('phase')})" for p in pods
                if not any(c["type"] == "Ready" and c["status"] == "True"
                           for c in p.get("status", {}).get("conditions", []))]
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for config in kubectl.get_json(kind, "-l", "app.kubernetes.io/part-of=batchgate")["items"]:
            waiting += [f"{kind[:-1]} {config['metadata']['name']}: webhook {h['name']} has no caBundle"
                        for h in config.get("webhooks", []) if not h.get("clientConfig", {}).get("caBundle")]
    if not deployments:
        waiting.append(f"no deployment in {SYSTEM_NAMESPACE}")
    return not waiting, "; ".join(waiting)


def install_product(kubectl: Kubectl, timeout: float = INSTALL_TIMEOUT_SECONDS, force_conflicts: bool = False) -> float:
    """`kubectl apply --server-side -k manifests/local` as docs/install.md installs, then the demo's
    policy (an admin's edit of the ConfigMap); waits until every product pod is Ready and the
    certificate keeper has injected the caBundle. Returns the seconds that took. `force_conflicts`:
    as the move from MLBatch installs, taking over the CRDs' fields that `batchgate migrate` wrote."""
    started = time.monotonic()
    kubectl.run("apply", "--server-side", *(["--force-conflicts"] if force_conflicts else []), "-k", str(LOCAL_OVERLAY))
    while True:
        ready, missing = product_status(kubectl)
        if ready:
            break
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"the product was not ready {timeout:.0f}s after kubectl apply --server-side -k "
                               f"manifests/local: "
                               f"{missing} (kubectl get pods,events -n {SYSTEM_NAMESPACE})")
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    # The policy's own webhook guards the ConfigMap, so the edit waits for a ready gateway; then
    # every gunicorn worker of every gateway pod reloads it (a log line each).
    before = policy_loads(kubectl)
    kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "policy.yaml"))
    while any(policy_loads(kubectl).get(pod, (0, 0))[0] < count + workers for pod, (count, workers) in before.items()):
        if time.monotonic() - started > timeout:
            raise RuntimeError("the gateway pods did not reload the demo's policy "
                               f"(kubectl logs -n {SYSTEM_NAMESPACE} deploy/{GATEWAY_SERVICE})")
        time.sleep(0.2)
    return elapsed


def policy_loads(kubectl: Kubectl) -> dict[str, tuple[int, int]]:
    """Per gateway pod: how many times its workers have loaded a policy, and how many workers it has."""
    out: dict[str, tuple[int, int]] = {}
    for pod in kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l", f"app.kubernetes.io/name={GATEWAY_SERVICE}")["items"]:
        name = pod["metadata"]["name"]
        args = pod["spec"]["containers"][0].get("args", [])
        workers = int(args[args.index("--workers") + 1]) if "--workers" in args else 1
        log = kubectl.run("logs", "-n", SYSTEM_NAMESPACE, name, "-c", "webhook").stdout
        out[name] = (log.count("loaded from configmap"), workers)
    return out
