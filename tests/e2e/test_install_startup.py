"""One fresh install, then the documented upgrade on it, then the uninstall: one cluster whose
kubelets bring Secret volumes up to date at a real kubelet's pace (the local kubelets, on the
real control plane or on the stand-in).

A fresh install starts every product container once, with no restart. The gateway waits for
the certificate files its keeper makes after the pod has started; they reach the pod's volume at
the kubelet's next sync (a real kubelet's syncFrequency is a minute). Its liveness probe (10 s x
3) alone killed it before that; the startup probe holds liveness off until the gateway serves.
What the start took is read before anything else touches the cluster.

The upgrade (docs/install.md, "Upgrade"): the install applied server side, the keeper's caBundle
injected, the admin's edit of the policy ConfigMap (the demo's policy, applied by
`install_product`), then the same overlay applied server side again while alice keeps
submitting: no conflict, the caBundle and the admin's policy kept, no failed review. Then the
uninstall leaves users' objects and third-party CRDs alone.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from demo.kubectl import Kubectl
from demo.stack import DEMO_MANIFESTS, LOCAL_OVERLAY, SYSTEM_NAMESPACE, install_product, local_image, product_status
from localcluster.sim.nodes import nodes_from_flags
from tests import clusters
from tests.e2e.test_install import (STREAM_SECONDS, bundles, eventually, stream_during, third_party_crds,
                                    uninstall_keeps_users_objects)

KUBELET_SYNC = dt.timedelta(seconds=40)
"""Shorter than a real kubelet's minute, still longer than the liveness probe's 30 s."""

UPGRADE = ("apply", "--server-side", "-k", str(LOCAL_OVERLAY), "-l", "app.kubernetes.io/component!=policy")
"""docs/install.md's upgrade: every object of the install but the policy, which the admin owns."""


@dataclass(frozen=True)
class Fresh:
    kubectl: Kubectl
    crds_before: dict[str, str]
    seconds: float  # what the install took until every pod was Ready
    restarted: dict[str, int]  # container -> restarts, right after the install


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fresh]:
    with clusters.cluster(tmp_path_factory.mktemp("startup") / "cluster", users_file=DEMO_MANIFESTS / "users.yaml",
                          nodes=nodes_from_flags(2, "32", "256Gi", 8), run_images=[local_image()],
                          kubelet_sync=KUBELET_SYNC) as (_, kubectl):
        crds_before = third_party_crds(kubectl)
        seconds = install_product(kubectl, timeout=180)
        restarted = {f"{pod['metadata']['name']}/{status['name']}": status["restartCount"]
                     for pod in kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE)["items"]
                     for status in pod["status"]["containerStatuses"] if status["restartCount"]}
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "queues.yaml"))
        yield Fresh(kubectl, crds_before, seconds, restarted)


def policy_text(kubectl: Kubectl) -> str:
    text: str = kubectl.get_json("configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy")["data"]["policy.yaml"]
    return text


def test_a_fresh_install_starts_every_product_container_without_a_restart(fresh: Fresh) -> None:
    assert fresh.seconds > KUBELET_SYNC.total_seconds() * 0.9, "the Secret reached the pods before the kubelet's sync"
    assert not fresh.restarted, f"restarted on a fresh install: {fresh.restarted}"


def test_re_applying_the_install_keeps_bundle_policy_and_reviews_then_uninstall_keeps_users_objects(
        fresh: Fresh) -> None:
    kubectl = fresh.kubectl
    eventually(lambda: product_status(kubectl)[0], "every product pod Ready: " + product_status(kubectl)[1])
    admins = yaml.safe_load((DEMO_MANIFESTS / "policy.yaml").read_text())["data"]["policy.yaml"]
    assert policy_text(kubectl) == admins, "install_product applies the demo's policy: the admin's edit"
    (bundle,) = bundles(kubectl)
    upgrades: list[subprocess.CompletedProcess[str]] = []
    sent, failed, errors = stream_during(kubectl, lambda k: upgrades.append(k.run(*UPGRADE, check=False)),
                                         STREAM_SECONDS)
    (upgrade,) = upgrades
    assert upgrade.returncode == 0, upgrade.stderr
    assert sent and not failed, errors
    assert bundles(kubectl) == {bundle}, "the keeper's caBundle was reset by the re-apply"
    assert policy_text(kubectl) == admins, "the admin's policy was put back to the shipped one"
    uninstall_keeps_users_objects(kubectl, fresh.crds_before)
