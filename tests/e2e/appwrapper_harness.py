"""A whole batchgate installation on the local cluster, for AppWrapper fault scenarios.

One `AwStack` per test module: the local cluster (kubelets sped up `SPEED` times), the real
gateway registered from the shipped webhook manifests, and the real `batchgate controller`
process. Each test gets a `Scenario`: its own namespace with its own ClusterQueue (cpu 4,
nvidia.com/gpu 4, as upstream's e2e queue), LocalQueue `default-queue` and a `kubectl get aw -w`
running as alice, so a test can ask for the whole story a user watching would have seen.

Time: a pod's behaviour is written on the stand-in's clock, which runs SPEED times faster than the
wall (a pod's `runFor: 10s` takes 10/SPEED real seconds). The real control plane runs on wall time,
so there the harness divides those durations by SPEED: a scenario's pods take the same wall time on
both. The controller's grace periods run on the wall clock, so the fault-tolerance annotations in
the scenarios are wall-clock durations.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from demo.kubectl import Kubectl
from demo.stack import (GATEWAY_SERVICE, SYSTEM_NAMESPACE, gateway_configurations, gateway_service,
                        kubeconfig_for, wait_until_ready)
from localcluster.runner import LocalCluster
from localcluster.sim.behavior import BEHAVIOR_ANNOTATION
from localcluster.sim.units import parse_duration
from localcluster.sim.nodes import parse_nodes_file
from realcluster.cluster import RealCluster
from tests import clusters
from tests.localcluster_fixtures import role_binding, service_account_kubeconfig
from webhook.serving.launch import REPO_ROOT, RunningGateway, start_gateway

SPEED = 10.0
USERS = REPO_ROOT / "demo" / "manifests" / "users.yaml"
CONTROLLER_USER = "batchgate-controller"
GATEWAY_ACCOUNT = "batchgate-webhook"
USER = "alice"
FLAVOR_LABEL = "batchgate.dev/e2e-pool"
FLAVOR = "aw-e2e-flavor"
QUEUE = "default-queue"
CONTROLLER_START_TIMEOUT = 30.0
WATCH_SENTINEL = "watch-sentinel"
DURATIONS = ("startAfter", "runFor", "crashAfter")  # the behaviour's keys that are durations
WAIT = 60.0  # default timeout of every wait below, in wall seconds (generous: CI machines are shared)

DEDICATED = "batchgate.dev/e2e-dedicated"
# Three GPU nodes of the flavor's pool, so a pod evicted from one node has somewhere to go. They are
# tainted: only pods given the flavor's toleration (through podSetInfos) can run there.
NODES = f"""
- name: gpu
  count: 3
  labels: {{{FLAVOR_LABEL}: a, nvidia.com/gpu.present: "true"}}
  taints: [{{key: {DEDICATED}, value: "true", effect: NoSchedule}}]
  capacity: {{cpu: '8', memory: 64Gi, nvidia.com/gpu: '4'}}
"""

# The shipped policy, except that pods are bound by the local cluster's default scheduler (the
# gang scheduler is not under test here) and nothing is gang-labelled. Components are authorized
# for alice and the controller with SubjectAccessReviews the gateway asks as its service account.
POLICY = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: batchgate-policy, namespace: batchgate-system}
data:
  policy.yaml: |
    exempt:
      namespaces: [kube-system, kube-public, kube-node-lease, batchgate-system]
      users: [system:serviceaccount:batchgate-system:batchgate-controller]
      groups: [system:masters]
    queues:
      defaultQueueName: default-queue
    scheduling: {schedulerName: default-scheduler, gang: false}
%s"""


def policy_configmap(extra: str = "") -> str:
    """The stack's policy ConfigMap, with `extra` (indented policy.yaml lines) appended."""
    return POLICY % extra

PRIORITIES = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: aw-e2e-low}
value: 1
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: aw-e2e-high}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: %s}
spec:
  nodeLabels: {%s: a}
  tolerations: [{key: %s, operator: Exists, effect: NoSchedule}]
""" % (FLAVOR, FLAVOR_LABEL, DEDICATED)

T = TypeVar("T")


def eventually(probe: Callable[[], T], what: Callable[[], str], timeout: float = WAIT, interval: float = 0.1) -> T:
    """Poll `probe` until it returns something truthy; on timeout fail with `what()` (the story so far)."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s\n{what()}")
        time.sleep(interval)


@dataclass
class ControllerProcess:
    """`batchgate controller` as a child process; its log goes to a file kept for failure reports."""

    kubeconfig: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", str(self.kubeconfig),
                   "--metrics-address", "127.0.0.1", "--metrics-port", "0", "--log-level", "info",
                   "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5"]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + CONTROLLER_START_TIMEOUT
        while "probes on http://" not in self.log_path.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"batchgate controller did not start:\n{self.tail()}")
            time.sleep(0.1)

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        # Forget the old "probes on" line so the next start waits for its own.
        self.log_path.write_text(self.log_path.read_text(errors="replace").replace("probes on http://", "probes on (old) "))

    def loaded_policies(self) -> int:
        """How many times this process has loaded a policy (its log says so each time)."""
        return self.log_path.read_text(errors="replace").count("INFO controller.adapters.manager: policy ")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class AwStack:
    """The cluster, the gateway and the controller, installed as an admin would. No gateway where
    upstream's webhooks serve instead (bench/peers/appwrapper_differential.py: Kueue and the
    AppWrapper controller, whose `controller` is that controller's log, run by realcluster/peers.py)."""

    workdir: Path
    cluster: LocalCluster | RealCluster
    kubectl: Kubectl
    gateway: RunningGateway | None
    controller: ControllerProcess

    def admin(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.kubectl.run(*args, stdin=stdin, check=check)

    def stop(self) -> None:
        self.controller.stop()
        if self.gateway is not None:
            self.gateway.stop()
        self.cluster.stop()


def start_stack(workdir: Path) -> AwStack:
    cluster, kubectl = clusters.make(workdir / "cluster", users_file=USERS, speed=SPEED, nodes=parse_nodes_file(NODES))
    cluster.start()
    gateway: RunningGateway | None = None
    try:
        kubectl.run("apply", "-k", str(clusters.development_crds(cluster)))
        kubectl.run("create", "namespace", SYSTEM_NAMESPACE)
        kubectl.run("apply", "-k", str(REPO_ROOT / "manifests" / "rbac"))  # the product's and the users' roles
        kubectl.run("apply", "-f", "-", stdin=policy_configmap())
        kubectl.run("apply", "-f", "-", stdin=PRIORITIES)
        gateway_identity = service_account_kubeconfig(cluster.kubeconfig, SYSTEM_NAMESPACE, GATEWAY_ACCOUNT,
                                                      workdir / "gateway.kubeconfig")
        clock = SystemClock()
        certs = workdir / "gateway-certs"
        write_serving_files(certs, service_names(GATEWAY_SERVICE, SYSTEM_NAMESPACE), clock.now())
        gateway = start_gateway(certs, "--workers", "1", "--threads", "8", "--policy-configmap",
                                f"{SYSTEM_NAMESPACE}/batchgate-policy", "--kubeconfig", str(gateway_identity),
                                "--audit-log", str(workdir / "audit.log"))
        wait_until_ready(gateway, clock)
        kubectl.run("apply", "-f", "-", stdin=gateway_service(f"{gateway.host}:{gateway.port}"))
        ca_bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
        kubectl.run("apply", "-f", "-", stdin=gateway_configurations(ca_bundle, kubectl))
        controller = ControllerProcess(kubeconfig_for(cluster.kubeconfig, CONTROLLER_USER,
                                                      workdir / "controller.kubeconfig"),
                                       workdir / "controller.log")
        controller.start()
    except BaseException:
        if gateway is not None:
            gateway.stop()
        cluster.stop()
        raise
    return AwStack(workdir, cluster, kubectl, gateway, controller)


# ---------------------------------------------------------------- manifests


def pod_template(behavior: Mapping[str, Any] | None = None, cpu: str = "1", gpu: int = 0,
                 image: str | None = "trainer:1") -> dict[str, Any]:
    """A pod template whose simulated container follows `behavior` (localcluster/sim/behavior.py)."""
    requests: dict[str, Any] = {"cpu": cpu}
    if gpu:
        requests[keys.GPU_RESOURCE] = str(gpu)
    container: dict[str, Any] = {"name": "main", "resources": {"requests": requests, "limits": dict(requests)}}
    if image is not None:
        container["image"] = image
    metadata: dict[str, Any] = {}
    if behavior is not None:
        metadata["annotations"] = {BEHAVIOR_ANNOTATION: json.dumps(on_cluster_clock(behavior))}
    return {"metadata": metadata, "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                                           "containers": [container]}}


def on_cluster_clock(behavior: Mapping[str, Any]) -> dict[str, Any]:
    """`behavior` as the chosen cluster's kubelets read it: unchanged on the stand-in, whose clock
    runs SPEED times faster; its durations divided by SPEED on the real control plane's wall time."""
    if not clusters.on_real():
        return dict(behavior)
    return {k: f"{parse_duration(v).total_seconds() / SPEED:g}s" if k in DURATIONS else v for k, v in behavior.items()}


def pod(name: str, **template: Any) -> dict[str, Any]:
    body = pod_template(**template)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **body["metadata"]}, "spec": body["spec"]}


def job(name: str, parallelism: int = 1, completions: int | None = None, backoff_limit: int = 0,
        **template: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"parallelism": parallelism, "backoffLimit": backoff_limit,
                            "template": pod_template(**template)}
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def pytorchjob(name: str, workers: int = 1, **template: Any) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        body = pod_template(**template)
        body["spec"]["containers"][0]["name"] = "pytorch"
        body["spec"].pop("restartPolicy")
        return {"replicas": count, "restartPolicy": "Never", "template": body}

    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}}}


def appwrapper(name: str, components: Sequence[Mapping[str, Any]], annotations: Mapping[str, str] | None = None,
               labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "metadata": metadata,
            "spec": {"components": [{"template": dict(c)} for c in components]}}


def fault_tolerance(**values: str) -> dict[str, str]:
    """`retryLimit="2", failureGracePeriodDuration="0s"` -> the AppWrapper annotations."""
    return {f"workload.codeflare.dev.appwrapper/{k}": v for k, v in values.items()}


# ---------------------------------------------------------------- a user's view


@dataclass
class Watch:
    """`kubectl get aw -w --output-watch-events -o json` as the user: every version of every AppWrapper."""

    process: subprocess.Popen[str]
    seen: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, kubectl: Kubectl, namespace: str) -> "Watch":
        command = [kubectl.binary, "--kubeconfig", str(kubectl.kubeconfig), "--context", USER, "get", "aw",
                   "-n", namespace, "-w", "--output-watch-events", "-o", "json"]
        watch = cls(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        threading.Thread(target=watch._read, daemon=True, name=f"watch-{namespace}").start()
        return watch

    def _read(self) -> None:
        assert self.process.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for line in self.process.stdout:
            buffer += line
            while buffer.strip():
                try:
                    event, end = decoder.raw_decode(buffer.lstrip())
                except json.JSONDecodeError:
                    break
                buffer = buffer.lstrip()[end:]
                with self.lock:
                    self.seen.append(event.get("object", event))

    def versions(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [o for o in self.seen if o["metadata"]["name"] == name]

    def phases(self, name: str) -> list[str]:
        """The phases `name` went through, repeats collapsed (a phase seen again later is listed again)."""
        out: list[str] = []
        for version in self.versions(name):
            phase = (version.get("status") or {}).get("phase", "")
            if not out or out[-1] != phase:
                out.append(phase)
        return out

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def condition(aw: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (aw.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


@dataclass
class Scenario:
    """One test's namespace, queue and user; everything read the way alice would read it."""

    stack: AwStack
    namespace: str
    watch: Watch

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                user: str = USER) -> subprocess.CompletedProcess[str]:
        return self.stack.kubectl.run(*args, "-n", self.namespace, stdin=stdin, check=check, user=user)

    def apply(self, *objects: Mapping[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(list(objects)))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        done = self.kubectl("get", kind, name, "-o", "json", check=False)
        if done.returncode != 0:
            if "NotFound" in done.stderr or "not found" in done.stderr:
                return None
            raise AssertionError(f"kubectl get {kind} {name}: {done.stderr}")
        return json.loads(done.stdout)

    def aw(self, name: str) -> dict[str, Any]:
        got = self.get("aw", name)
        assert got is not None, f"AppWrapper {name} is gone\n{self.story(name)}"
        return got

    def items(self, kind: str, selector: str | None = None) -> list[dict[str, Any]]:
        args = ["get", kind, "-o", "json"] + (["-l", selector] if selector else [])
        return json.loads(self.kubectl(*args).stdout)["items"]

    def pods(self, aw: str) -> list[dict[str, Any]]:
        return self.items("pods", f"{keys.APPWRAPPER_LABEL}={aw}")

    def row(self, name: str) -> dict[str, str]:
        """`kubectl get aw NAME`: the printer columns, by header."""
        header, line = self.kubectl("get", "aw", name).stdout.splitlines()[:2]
        titles = [t.strip() for t in _columns(header)]
        return dict(zip(titles, _split_like(header, line)))

    def describe(self, name: str) -> str:
        return self.kubectl("describe", "aw", name).stdout

    def story(self, name: str) -> str:
        """What a reviewer needs when a wait fails: phases seen, the last status, the controller log."""
        versions = self.watch.versions(name)
        last = versions[-1].get("status") if versions else None
        return (f"phases of {self.namespace}/{name}: {self.watch.phases(name)}\n"
                f"last status: {json.dumps(last, indent=1)}\n"
                f"controller log:\n{self.stack.controller.tail()}")

    def wait(self, name: str, probe: Callable[[dict[str, Any]], bool], what: str,
             timeout: float = WAIT) -> dict[str, Any]:
        """Until the AppWrapper, as `kubectl get` shows it, satisfies `probe`; returns that version."""
        def check() -> dict[str, Any] | None:
            aw = self.get("aw", name)
            return aw if aw is not None and probe(aw) else None
        return eventually(check, lambda: f"waiting for {what}\n{self.story(name)}", timeout)

    def wait_phase(self, name: str, phase: str, timeout: float = WAIT) -> dict[str, Any]:
        return self.wait(name, lambda aw: (aw.get("status") or {}).get("phase") == phase, f"phase {phase}", timeout)

    def wait_condition(self, name: str, kind: str, status: str, reason: str | None = None,
                       timeout: float = WAIT) -> dict[str, Any]:
        def probe(aw: dict[str, Any]) -> bool:
            c = condition(aw, kind)
            return c.get("status") == status and (reason is None or c.get("reason") == reason)
        return self.wait(name, probe, f"condition {kind}={status} {reason or ''}", timeout)

    def wait_seen(self, name: str, phase: str, timeout: float = WAIT) -> None:
        """Until the watch has seen `phase` at least once (it may be gone again by now)."""
        eventually(lambda: phase in self.watch.phases(name), lambda: f"waiting to see {phase}\n{self.story(name)}",
                   timeout)

    def wait_pods(self, aw: str, probe: Callable[[list[dict[str, Any]]], bool], what: str,
                  timeout: float = WAIT) -> list[dict[str, Any]]:
        found: list[list[dict[str, Any]]] = []

        def check() -> bool:
            found[:] = [self.pods(aw)]
            return probe(found[0])
        eventually(check, lambda: f"waiting for pods: {what}\n{self.story(aw)}", timeout)
        return found[0]

    def wait_no_pods(self, aw: str, timeout: float = WAIT) -> None:
        eventually(lambda: not self.pods(aw), lambda: f"waiting for the pods of {aw} to go\n{self.story(aw)}", timeout)


def _columns(header: str) -> list[str]:
    return [m.group(0) for m in re.finditer(r"\S+(?: \S+)*", header)]


def _split_like(header: str, line: str) -> list[str]:
    """Cut a table row at the header's column starts (titles like `QUOTA RESERVED` hold spaces)."""
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    ends = starts[1:] + [len(line)]
    return [line[s:e].strip() for s, e in zip(starts, ends)]


_TEAM_BINDING: dict[str, dict[str, Any]] = {}  # rendered once: it depends on the repository's files only


def team_controller_binding(stack: AwStack, namespace: str) -> str:
    """The controller's RoleBinding from the shipped team template (manifests/team/), for `namespace`."""
    if not _TEAM_BINDING:
        rendered = stack.admin("kustomize", str(REPO_ROOT / "manifests" / "team")).stdout
        _TEAM_BINDING["binding"] = next(d for d in yaml.safe_load_all(rendered)
                                        if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "batchgate-controller-team")
    binding = copy.deepcopy(_TEAM_BINDING["binding"])
    binding["metadata"]["namespace"] = namespace
    return yaml.safe_dump(binding)


def new_scenario(stack: AwStack, quota: Mapping[str, str] | None = None) -> Iterator[Scenario]:
    """A namespace with its own ClusterQueue (cpu 4, nvidia.com/gpu 4) and LocalQueue; torn down after."""
    namespace = f"aw-{uuid.uuid4().hex[:8]}"
    quota = quota or {"cpu": "4", keys.GPU_RESOURCE: "4"}
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": f"cq-{namespace}"},
        "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                 "preemption": {"withinClusterQueue": "LowerPriority"},
                 "resourceGroups": [{"coveredResources": list(quota), "flavors": [
                     {"name": FLAVOR, "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()]}]}]},
    }
    local = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
             "metadata": {"name": QUEUE, "namespace": namespace}, "spec": {"clusterQueue": f"cq-{namespace}"}}
    stack.admin("create", "namespace", namespace)
    stack.admin("label", "namespace", namespace, "mlbatch-team-namespace=true")  # a team namespace opts in
    stack.admin("apply", "-f", "-", stdin=role_binding(namespace, "edit", (USER,)) + "---\n"
                + role_binding(namespace, "batchgate-team", (USER,)))
    # The queues, and the controller's rights over the team's Secrets as onboarding binds them.
    stack.admin("apply", "-f", "-", stdin=yaml.safe_dump_all([queue, local]) + "---\n"
                + team_controller_binding(stack, namespace))
    watch = Watch.start(stack.kubectl, namespace)
    # kubectl needs a moment before its watch stands; an AppWrapper no controller of ours manages
    # (the admin's, so unqueued, and managed by someone else) shows when it does. It wraps a pod:
    # upstream's webhook refuses an AppWrapper without one (bench/peers/appwrapper_differential.py).
    sentinel = {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
                "metadata": {"name": WATCH_SENTINEL, "namespace": namespace},
                "spec": {"managedBy": "example.com/nobody", "components": [{"template": pod(WATCH_SENTINEL)}]}}
    stack.admin("apply", "-f", "-", stdin=yaml.safe_dump(sentinel))
    eventually(lambda: watch.versions(WATCH_SENTINEL), lambda: f"kubectl get aw -w in {namespace} saw nothing")
    try:
        yield Scenario(stack, namespace, watch)
    finally:
        watch.stop()
        stack.admin("delete", "namespace", namespace, "--wait=false", check=False)
        stack.admin("delete", "clusterqueue", f"cq-{namespace}", "--wait=false", check=False)
