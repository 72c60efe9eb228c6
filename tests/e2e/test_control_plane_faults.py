"""Faults only a real control plane has (docs/realcluster.md): kube-apiserver restarted during a
stream of alice's submissions, and etcd restarted under the controller. Watches end, and the new
API server's watch cache refuses the old resourceVersions (410 Gone), so every informer of the
controller, the gateway's policy reloader and the certificate keeper must relist. What must
hold: every submission the API server acknowledged is admitted exactly once, the product's pods
are Ready again with their caBundles, and the keeper still renews on request. The seconds to
recover (restart begun to the first admission of a submission made after it) are printed.

The etcd restart found a lost AppWrapper: a Lease renewal held by the API server while etcd came
back landed after the renew deadline, the workers had dropped their keys meanwhile, and the
controller carried on in the old term without offering them again (now a new term, with a resync;
tests/controller/adapters/test_runtime_cluster.py pins it without a cluster).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from demo.kubectl import Kubectl
from demo.stack import product_status
from localcluster.sim.behavior import BEHAVIOR_ANNOTATION
from realcluster.cluster import RealCluster
from tests import clusters
from tests.e2e.test_install import alice_appwrapper, eventually, force_renewal, installed_cluster
from tests.realcluster_fixtures import NOT_BUILT

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]
if not clusters.on_real():
    pytestmark.append(pytest.mark.skip(reason=f"a fault of the real control plane: {NOT_BUILT}"))

TEAM = "team-a"


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RealCluster, Kubectl]]:
    with installed_cluster(tmp_path_factory.mktemp("plane-faults")) as (cluster, kubectl, _):
        assert isinstance(cluster, RealCluster)
        yield cluster, kubectl


def short_lived(name: str) -> dict[str, Any]:
    """alice's AppWrapper whose pod runs 2 s, so a long stream never waits for quota."""
    wrapper = alice_appwrapper(name)
    template = wrapper["spec"]["components"][0]["template"]["spec"]["template"]
    template.setdefault("metadata", {})["annotations"] = {BEHAVIOR_ANNOTATION: json.dumps({"runFor": "2s"})}
    return wrapper


def admissions(kubectl: Kubectl) -> dict[str, int]:
    """AppWrapper name -> how many admitted Workloads it owns."""
    counts: dict[str, int] = {}
    for workload in kubectl.get_json("workloads", "-n", TEAM)["items"]:
        if any(c["type"] == "Admitted" and c["status"] == "True" for c in workload.get("status", {}).get("conditions", [])):
            for ref in workload["metadata"].get("ownerReferences", []):
                if ref["kind"] == "AppWrapper":
                    counts[ref["name"]] = counts.get(ref["name"], 0) + 1
    return counts


def stream_around(kubectl: Kubectl, prefix: str, fault: Callable[[], None]) -> tuple[list[str], list[str], float]:
    """alice submits AppWrappers one after another while `fault` runs; the names the API server
    acknowledged, those submitted after the fault ended, and when the fault began."""
    acknowledged: list[str] = []
    after: list[str] = []
    fault_over = threading.Event()
    stop = threading.Event()

    def submit() -> None:
        index = 0
        while not stop.is_set():
            name = f"{prefix}-{index}"
            index += 1
            later = fault_over.is_set()
            done = kubectl.run("create", "-f", "-", user="alice", check=False, stdin=json.dumps(short_lived(name)))
            if done.returncode == 0:
                acknowledged.append(name)
                if later:
                    after.append(name)
            time.sleep(0.2)

    submitter = threading.Thread(target=submit)
    submitter.start()
    time.sleep(3)
    began = time.monotonic()
    fault()
    fault_over.set()
    eventually(lambda: len(after) >= 3, "three submissions acknowledged after the restart", timeout=120)
    stop.set()
    submitter.join()
    return acknowledged, after, began


def recovered(cluster: RealCluster, kubectl: Kubectl, prefix: str, fault: Callable[[], None]) -> None:
    acknowledged, after, began = stream_around(kubectl, prefix, fault)
    first_after = eventually(lambda: after[0] in admissions(kubectl) and time.monotonic(),
                             f"{after[0]}, submitted after the restart, admitted")
    print(f"{prefix}: {len(acknowledged)} submissions acknowledged; the first one after the fault was admitted "
          f"{first_after - began:.1f} s after the fault began")
    counts = eventually(lambda: set(acknowledged) <= set(admissions(kubectl)) and admissions(kubectl),
                        "every acknowledged submission admitted")
    assert {name: counts[name] for name in acknowledged} == {name: 1 for name in acknowledged}, \
        "an AppWrapper was admitted twice"
    eventually(lambda: product_status(kubectl)[0], "the product whole: " + product_status(kubectl)[1])
    force_renewal(kubectl)  # the certificate keeper still works: a forced renewal is served


def test_a_kube_apiserver_restart_mid_stream_loses_nothing_and_admits_nothing_twice(
        plane: tuple[RealCluster, Kubectl]) -> None:
    cluster, kubectl = plane
    recovered(cluster, kubectl, "apiserver", cluster.restart_apiserver)


def test_an_etcd_restart_under_the_controller_loses_nothing_and_admits_nothing_twice(
        plane: tuple[RealCluster, Kubectl]) -> None:
    cluster, kubectl = plane
    recovered(cluster, kubectl, "etcd", cluster.restart_etcd)
