"""Which Kubernetes the demo runs on (`batchgate demo --kube`), and the end-to-end tests too
(tests/clusters.py): Kubernetes' own control plane when it is built (realcluster/, `make kube`),
else the stand-in (localcluster/). The choice lives here only.

Both offer the same kubeconfig (users admin, alice, bob), nodes (the local kubelets) and process
pods of the product's image, so what runs on them is written once. Each is driven by a kubectl
it accepts: the real control plane by the kubectl of its own release (the user's may be several
minors away), the stand-in by the one on the PATH.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from demo.kubectl import KUBECTL, Kubectl
from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import KUBELET_SYNC, LocalCluster
from realcluster import toolchain
from realcluster.cluster import RealCluster

KINDS = ("auto", "local", "real")
PROGRAMS = "kube-apiserver, etcd, kube-controller-manager, kube-scheduler"


class KubeChoiceError(Exception):
    """The Kubernetes asked for cannot run here; one line that names the fix."""


@dataclass(frozen=True)
class Kube:
    """The chosen Kubernetes: `real` with its built programs, or `local` with why the stand-in."""

    wanted: str  # what was asked: one of KINDS
    binaries: Mapping[str, Path] | None  # the real control plane's programs (None on the stand-in)
    why_local: str = ""  # on the stand-in: why not the real control plane

    @property
    def kind(self) -> str:
        return "real" if self.binaries is not None else "local"

    @property
    def kubectl(self) -> str:
        """The kubectl to drive it with."""
        return str(self.binaries["kubectl"]) if self.binaries is not None else KUBECTL

    def describe(self) -> str:
        """One line for the narration: which Kubernetes this is."""
        if self.binaries is not None:
            return f"Kubernetes {toolchain.load_versions().kubernetes} ({PROGRAMS} built from their Go modules)"
        return f"the stand-in API server (localcluster/; {self.why_local})"

    def make(self, workdir: Path, *, users_file: Path | None = None, nodes: Sequence[Any] = (),
             run_images: Sequence[str] = (), speed: float = 1.0, record_requests: bool = False,
             kubelet_sync: dt.timedelta = KUBELET_SYNC,
             operators: bool | Literal["upstream"] = True) -> tuple[LocalCluster | RealCluster, Kubectl]:
        """The cluster, not started yet, and kubectl as its users. `speed` is the stand-in's only:
        the real control plane runs on real time (its `speed` is 1). `record_requests`: every
        request recorded (kube-apiserver's audit log, or the stand-in's authorizer). `kubelet_sync`:
        how often the local kubelets (on either) bring process pods' volumes up to date. `operators`
        the real control plane's only: "upstream" runs KubeRay's and the training operator."""
        made: LocalCluster | RealCluster
        if self.binaries is not None:
            made = RealCluster(workdir, users_file=users_file, nodes=nodes, run_images=run_images,
                               binaries=self.binaries, audit=record_requests, operators=operators,
                               kubelet_sync=kubelet_sync)
        else:
            made = LocalCluster(workdir, users_file=users_file, speed=speed, controllers=DEFAULT_CONTROLLERS,
                                nodes=nodes, run_images=run_images, record_requests=record_requests,
                                kubelet_sync=kubelet_sync)
        return made, Kubectl(made.kubeconfig, self.kubectl)


def has_go() -> bool:
    """Whether Go is on the PATH, so `make kube` could build the real control plane."""
    try:
        toolchain.go_binary()
    except toolchain.ToolchainError:
        return False
    return True


def choose(wanted: str, built: Mapping[str, Path] | None, go: Callable[[], bool] = has_go) -> Kube:
    """`auto` is the real control plane when it is `built` (toolchain.locate()), else the stand-in;
    `real` where nothing is built is a KubeChoiceError. `go` says whether Go could build it."""
    if wanted not in KINDS:
        raise KubeChoiceError(f"--kube {wanted}: expected one of {', '.join(KINDS)}")
    if wanted == "local":
        return Kube(wanted, None, "chosen with --kube local")
    if built is not None:
        return Kube(wanted, built)
    go_found = go()
    if wanted == "real":
        raise KubeChoiceError("--kube real: the real control plane is not built" + (
            ": `make kube` builds it (minutes, once)" if go_found else
            " and Go is not installed: install Go 1.25 or newer, then `make kube` builds it") + "; or use --kube local")
    return Kube(wanted, None, "the real control plane is not built: `make kube` builds it" if go_found else
                "Go not found: install Go 1.25 or newer, then `make kube` builds Kubernetes")

