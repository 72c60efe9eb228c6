"""A fresh install starts every product container once, with no restart, on a cluster whose
kubelets bring Secret volumes up to date at a real kubelet's pace (the local kubelets, on the
real control plane or on the stand-in).

The gateway waits for the certificate files its keeper makes after the pod has started; they
reach the pod's volume at the kubelet's next sync (a real kubelet's syncFrequency is a minute).
Its liveness probe (10 s x 3) alone killed it before that; the startup probe holds liveness off
until the gateway serves.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from demo.stack import DEMO_MANIFESTS, SYSTEM_NAMESPACE, install_product, local_image
from localcluster.sim.nodes import nodes_from_flags
from tests import clusters

KUBELET_SYNC = dt.timedelta(seconds=40)
"""Shorter than a real kubelet's minute, still longer than the liveness probe's 30 s."""


def test_a_fresh_install_starts_every_product_container_without_a_restart(tmp_path: Path) -> None:
    with clusters.cluster(tmp_path / "cluster", users_file=DEMO_MANIFESTS / "users.yaml",
                          nodes=nodes_from_flags(2, "32", "256Gi", 8), run_images=[local_image()],
                          kubelet_sync=KUBELET_SYNC) as (_, kubectl):
        seconds = install_product(kubectl, timeout=180)
        assert seconds > KUBELET_SYNC.total_seconds() * 0.9, "the Secret reached the pods before the kubelet's sync"
        restarted = {f"{pod['metadata']['name']}/{status['name']}": status["restartCount"]
                     for pod in kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE)["items"]
                     for status in pod["status"]["containerStatuses"] if status["restartCount"]}
        assert not restarted, f"restarted on a fresh install: {restarted}"
