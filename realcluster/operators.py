"""The upstream operators of the workloads batchgate wraps, KubeRay's operator and Kubeflow's
training operator (built by `python -m realcluster.toolchain --operators`), run as local processes
beside a `RealCluster` in place of the local cluster's stand-ins (`RealCluster(operators="upstream")`).

Installed the way the peers are (realcluster/peers.py, whose steps this reuses): upstream's own
kustomize output from the module (CRDs, RBAC, Services, the training operator's webhook
configuration and Secret) less the Deployment, and the process runs as the service account that
Deployment names, with the Deployment's arguments and environment, and loopback ports.

What differs from upstream's install, and why:
- KubeRay's config/default installs into `default`; batchgate's policy trusts the identity its
  Helm chart and docs use, ray-system/kuberay-operator, so it goes there (what `kustomize edit set
  namespace ray-system` does).
- the training operator reads its webhook certificates from a fixed /tmp path (its cert
  controller's certDir is a constant) once its Secret is mounted there: the Secret's pair is
  copied there as kubelet's secret volume would (as for the peers). So that concurrent clusters'
  operators do not share that path, each runs in a mount namespace of its own in which the path
  is its cluster's cert dir; where this process may not make one (not root), one training
  operator runs on the machine at a time, and a lock says which.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from realcluster import toolchain
from realcluster.cluster import RealCluster
from realcluster.peers import Layout, PeerError, Peers, Ports, RunningPeer, installed_objects, upstream_args
from realcluster.processes import free_port

RAY_NAMESPACE = "ray-system"  # the namespace of the KubeRay identity batchgate's policy trusts
KUBERAY = Layout("kuberay-operator", RAY_NAMESPACE, "kuberay-operator", "kuberay-operator", "", "")
TRAINING = Layout("training-operator", "kubeflow", "training-operator", "training-operator",
                  "training-operator-webhook-cert", "", "manifests/overlays/standalone")
TRAINING_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # a constant in the training operator
TRAINING_LOCK = Path("/tmp/batchgate-training-operator.lock")


class OperatorError(PeerError):
    """An upstream operator cannot be built, installed or started; one line that names the fix."""


def into_namespace(objects: Sequence[Mapping[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """Upstream's install moved to `namespace`, as `kustomize edit set namespace` moves it: every
    namespaced object and every service-account subject of a binding; the Namespace first."""
    source = {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
    if len(source) > 1:
        raise OperatorError(f"upstream's install spans namespaces {sorted(source)}: update realcluster/operators.py")
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    for obj in objects:
        if obj.get("kind") == "Namespace":
            continue
        copy = dict(obj)
        if obj["metadata"].get("namespace"):
            copy["metadata"] = {**obj["metadata"], "namespace": namespace}
        if obj.get("subjects"):
            copy["subjects"] = [{**s, "namespace": namespace} if s.get("namespace") in source else dict(s)
                                for s in obj["subjects"]]
        out.append(copy)
    return out


def deployment_env(objects: Sequence[Mapping[str, Any]], layout: Layout) -> dict[str, str]:
    """The environment upstream's Deployment gives the manager, its downward-API values
    (metadata.namespace, metadata.name) filled in as kubelet fills them for a pod."""
    deployment = next(o for o in objects if o.get("kind") == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    fields = {"metadata.namespace": layout.namespace, "metadata.name": layout.program}
    out: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            out[item["name"]] = str(item["value"])
            continue
        path = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
        if path not in fields:
            raise OperatorError(f"upstream's Deployment sets {item['name']} from {path or 'a source'} that a local "
                                "process has no value for: update realcluster/operators.py")
        out[item["name"]] = fields[path]
    return out


def in_private_cert_dir(argv: Sequence[str], cert_dir: Path) -> list[str]:
    """`argv` run in a mount namespace of its own in which the training operator's fixed cert
    dir is `cert_dir` (the process stays the one started: unshare and sh exec it)."""
    script = 'mkdir -p "$1" && mount --bind "$2" "$1" && shift 2 && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(TRAINING_CERT_DIR),
            str(cert_dir), *argv]


def private_mounts() -> bool:
    """Whether this process may make a mount namespace (util-linux's unshare, as root)."""
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class Operators(Peers):
    """Starts the upstream operators on one RealCluster and stops them (and the training
    operator's webhook configuration) at exit."""

    which = staticmethod(toolchain.operator_programs)

    def __init__(self, cluster: RealCluster, binaries: Mapping[str, Path] | None = None,
                 cache: Path | None = None) -> None:
        cache = cache or toolchain.cache_root()
        chosen = toolchain.operator_programs(toolchain.load_versions())
        found = dict(binaries) if binaries is not None else {
            p.name: toolchain.binary_path(p, cache) for p in chosen if not toolchain.missing([p], cache)}
        super().__init__(cluster, found, cache)
        self.workdir = cluster.workdir / "operators"
        self._lock: IO[bytes] | None = None

    def built(self, name: str) -> bool:
        return name in self.binaries

    def start_kuberay(self) -> RunningPeer:
        if not self.built(KUBERAY.program):
            raise OperatorError("KubeRay's operator is not built: run `make operators` (needs Go 1.26+)")
        objects = into_namespace(self.render(KUBERAY), RAY_NAMESPACE)
        ports = Ports(0, free_port(), free_port())
        self._install(installed_objects(objects, KUBERAY, f"127.0.0.1:{ports.metrics}"))
        argv = [str(self.binaries[KUBERAY.program]), *upstream_args(objects, KUBERAY),
                f"--metrics-addr=127.0.0.1:{ports.metrics}", f"--health-probe-bind-address=127.0.0.1:{ports.health}",
                "--enable-leader-election=false", f"--kubeconfig={self._kubeconfig(KUBERAY)}"]
        return self._start(KUBERAY, argv, ports, self.workdir, deployment_env(objects, KUBERAY))

    def start_training_operator(self) -> RunningPeer:
        if not self.built(TRAINING.program):
            raise OperatorError("the training operator is not built: run `make operators` (needs Go 1.26+)")
        cert_dir = self.workdir / TRAINING.program / "certs"
        private = private_mounts()
        if not private:
            self._take_training_lock()
            shutil.rmtree(TRAINING_CERT_DIR, ignore_errors=True)  # another run's pair would pass its mount check
            cert_dir = TRAINING_CERT_DIR
        cert_dir.mkdir(parents=True, exist_ok=True)
        objects = self.render(TRAINING)
        ports = Ports(free_port(), free_port(), free_port())
        self._install(installed_objects(objects, TRAINING, f"127.0.0.1:{ports.webhook}"))
        argv = [str(self.binaries[TRAINING.program]), *upstream_args(objects, TRAINING),
                f"--webhook-server-port={ports.webhook}", f"--metrics-bind-address=127.0.0.1:{ports.metrics}",
                f"--health-probe-bind-address=127.0.0.1:{ports.health}", "--leader-elect=false",
                f"--kubeconfig={self._kubeconfig(TRAINING)}"]
        if private:
            argv = in_private_cert_dir(argv, cert_dir)
        return self._start(TRAINING, argv, ports, cert_dir, deployment_env(objects, TRAINING))

    def stop(self) -> None:
        super().stop()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _take_training_lock(self) -> None:
        handle = open(TRAINING_LOCK, "ab")  # noqa: SIM115 - held while the operator runs
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise OperatorError(f"another training operator runs on this machine ({TRAINING_LOCK} is locked): it "
                                f"keeps its certificates in the fixed {TRAINING_CERT_DIR}; stop it first") from None
        self._lock = handle
