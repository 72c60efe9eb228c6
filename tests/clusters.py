"""Which cluster an end-to-end test runs on: the real control plane when it is built (CI builds it:
realcluster/), else the stand-in; BATCHGATE_TEST_KUBE=local or =real chooses. Both offer the same
kubeconfig (users admin, alice, bob), nodes and process pods of the product's image, so a test
is written once."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from demo.kubectl import KUBECTL, Kubectl
from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import LocalCluster
from realcluster.cluster import RealCluster
from tests.realcluster_fixtures import BINARIES, NOT_BUILT

CHOICE = "BATCHGATE_TEST_KUBE"


def kind() -> str:
    """'real' or 'local'."""
    wanted = os.environ.get(CHOICE, "")
    if wanted not in ("", "local", "real"):
        raise pytest.UsageError(f"{CHOICE}={wanted!r}: expected local or real")
    if wanted == "real" and BINARIES is None:
        pytest.skip(NOT_BUILT)
    return wanted or ("real" if BINARIES is not None else "local")


def on_real() -> bool:
    return os.environ.get(CHOICE, "") != "local" and BINARIES is not None


def kubectl_binary(cluster: LocalCluster | RealCluster) -> str:
    """The kubectl of the real control plane's release on it; the user's kubectl on the stand-in."""
    if isinstance(cluster, RealCluster):
        assert BINARIES is not None
        return str(BINARIES["kubectl"])
    return KUBECTL


def make(workdir: Path, *, users_file: Path | None = None, nodes: Sequence[Any] = (), run_images: Sequence[str] = (),
         speed: float = 1.0, kube: str = "", record_requests: bool = False) -> tuple[LocalCluster | RealCluster, Kubectl]:
    """A cluster of `kube` ('real' or 'local'; `kind()` when not given: a benchmark compares both),
    not started yet, and kubectl as its users. `speed` applies to the stand-in only: the real
    control plane runs on real time (its `speed` is 1). `record_requests`: every request is
    recorded, by kube-apiserver's audit log on the real control plane (`RealCluster.read_audit`),
    by the stand-in's authorizer on the stand-in."""
    made: LocalCluster | RealCluster
    if (kube or kind()) == "real":
        made = RealCluster(workdir, users_file=users_file, nodes=nodes, run_images=run_images, binaries=BINARIES,
                           audit=record_requests)
    else:
        made = LocalCluster(workdir, users_file=users_file, speed=speed, controllers=DEFAULT_CONTROLLERS, nodes=nodes,
                            run_images=run_images, record_requests=record_requests)
    return made, Kubectl(made.kubeconfig, kubectl_binary(made))


@contextmanager
def cluster(workdir: Path, *, users_file: Path | None = None, nodes: Sequence[Any] = (),
            run_images: Sequence[str] = (), speed: float = 1.0,
            record_requests: bool = False) -> Iterator[tuple[LocalCluster | RealCluster, Kubectl]]:
    """`make`, started, and stopped after."""
    made, kubectl = make(workdir, users_file=users_file, nodes=nodes, run_images=run_images, speed=speed,
                         record_requests=record_requests)
    with made:
        yield made, kubectl
