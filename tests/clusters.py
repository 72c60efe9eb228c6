"""Which cluster an end-to-end test runs on: as the demo chooses (demo/kube.py), the real control
plane when it is built (CI builds it: realcluster/), else the stand-in; BATCHGATE_TEST_KUBE=local
or =real chooses; on the real one BATCHGATE_TEST_OPERATORS=upstream runs KubeRay's and the training
operator in place of the stand-in operators (docs/realcluster.md, "Operators"). Both offer the same kubeconfig (users admin, alice, bob), nodes and process pods
of the product's image, so a test is written once."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest

from demo.kube import Kube, KubeChoiceError, choose
from localcluster.runner import KUBELET_SYNC
from demo.kubectl import Kubectl
from localcluster.runner import LocalCluster
from realcluster.cluster import RealCluster
from tests.realcluster_fixtures import BINARIES, NOT_BUILT

CHOICE = "BATCHGATE_TEST_KUBE"
CRDS = Path(__file__).resolve().parents[1] / "manifests" / "crds"
OPERATORS = "BATCHGATE_TEST_OPERATORS"


def _wanted() -> str:
    wanted = os.environ.get(CHOICE, "")
    if wanted not in ("", "local", "real"):
        raise pytest.UsageError(f"{CHOICE}={wanted!r}: expected local or real")
    return wanted or "auto"


def _chosen(wanted: str) -> Kube:
    try:
        return choose(wanted or _wanted(), BINARIES)
    except KubeChoiceError:
        pytest.skip(NOT_BUILT)


def _operators() -> bool | Literal["upstream"]:
    """The real control plane's workload operators: the stand-ins, or upstream's."""
    wanted = os.environ.get(OPERATORS, "")
    if wanted not in ("", "standin", "upstream"):
        raise pytest.UsageError(f"{OPERATORS}={wanted!r}: expected standin or upstream")
    return "upstream" if wanted == "upstream" else True


def kube() -> Kube:
    """The chosen Kubernetes; a skip where the real one is asked for and not built."""
    return _chosen("")


def on_real() -> bool:
    try:
        return choose(_wanted(), BINARIES).kind == "real"
    except KubeChoiceError:
        return False


def make(workdir: Path, *, users_file: Path | None = None, nodes: Sequence[Any] = (), run_images: Sequence[str] = (),
         speed: float = 1.0, kube: str = "", record_requests: bool = False,
         kubelet_sync: dt.timedelta = KUBELET_SYNC) -> tuple[LocalCluster | RealCluster, Kubectl]:
    """A cluster, not started yet, and kubectl as its users: of `kube` ('real' or 'local': a
    benchmark compares both), else as chosen. `speed` applies to the stand-in only: the real control
    plane runs on real time (its `speed` is 1). `record_requests`: every request is recorded, by
    kube-apiserver's audit log on the real control plane (`RealCluster.read_audit`), by the
    stand-in's authorizer on the stand-in."""
    return _chosen(kube).make(workdir, users_file=users_file, nodes=nodes, run_images=run_images, speed=speed,
                              record_requests=record_requests, kubelet_sync=kubelet_sync, operators=_operators())


@contextmanager
def cluster(workdir: Path, *, users_file: Path | None = None, nodes: Sequence[Any] = (),
            run_images: Sequence[str] = (), speed: float = 1.0, record_requests: bool = False,
            kubelet_sync: dt.timedelta = KUBELET_SYNC) -> Iterator[tuple[LocalCluster | RealCluster, Kubectl]]:
    """`make`, started, and stopped after."""
    made, kubectl = make(workdir, users_file=users_file, nodes=nodes, run_images=run_images, speed=speed,
                         record_requests=record_requests, kubelet_sync=kubelet_sync)
    with made:
        yield made, kubectl


def development_crds(made: LocalCluster | RealCluster) -> Path:
    """The kustomization of CRDs a test applies before the product: all of manifests/crds, less the
    third-party stubs where upstream's operators installed their own CRDs (a stub over KubeRay's
    drops its defaults: a worker group's numOfHosts is then 0 and KubeRay makes no workers)."""
    upstream = isinstance(made, RealCluster) and made.operators == "upstream"
    return CRDS / "batchgate" if upstream else CRDS
