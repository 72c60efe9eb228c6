"""`batchgate migrate plan` and `apply` on a real control plane running Kueue and the AppWrapper
controller (realcluster/peers.py) with live work, then batchgate installed as docs/install.md's
"Moving from MLBatch" says: nothing lost, the admitted work keeps running in the same pods, the
pending work keeps its order, and the old webhooks are gone before batchgate's are installed.

One module fixture makes the whole migration; the tests read what it left.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.adapters.cluster_reader import connect
from controller.migrate import cli as migrate_cli
from controller.migrate.cli import SERVED, Migration, read
from controller.migrate.plan import Plan, Ref, plan_migration
from controller.migrate.rollback import plan_rollback
from demo.kubectl import Kubectl
from demo.stack import DEMO_MANIFESTS, install_product, local_image
from localcluster.sim.nodes import nodes_from_flags
from realcluster import peers
from realcluster.cluster import RealCluster
from realcluster.processes import listeners, port_taken
from tests import clusters
from tests.e2e.test_install import eventually
from tests.realcluster_fixtures import PEERS, PEERS_NOT_BUILT

pytestmark = [pytest.mark.binds_every_address, pytest.mark.realcluster, pytest.mark.timeout(900)]

NAMESPACE = "team-a"  # demo/manifests/teams.yaml: labelled as MLBatch labels team namespaces
KINDS = (*(f"{plural}.v1beta1.kueue.x-k8s.io"
           for plural in ("clusterqueues", "localqueues", "resourceflavors", "workloads")),
         "appwrappers.v1beta2.workload.codeflare.dev")  # by version: kubectl's discovery cache may name Kueue's v1beta2
BATCHGATE_CRD = Path(__file__).resolve().parents[2] / "manifests/crds/batchgate/kueue.x-k8s.io_workloads.yaml"


def _pod_spec() -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "busybox", "command": ["sleep", "3600"],
         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {"suspend": True, "template": {"spec": _pod_spec()}}}


def _appwrapper(name: str) -> dict[str, Any]:
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {"components": [{"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker"},
                                                  "spec": _pod_spec()}}]}}


QUEUES = [  # room for two pods of one CPU: the AppWrapper and the first Job; the others wait
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "migrate-flavor"}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "migrate-cq"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
         {"name": "migrate-flavor", "resources": [{"name": "cpu", "nominalQuota": "2"},
                                                   {"name": "memory", "nominalQuota": "8Gi"}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
     "metadata": {"name": "team", "namespace": NAMESPACE}, "spec": {"clusterQueue": "migrate-cq"}},
]


@dataclass(frozen=True)
class Snapshot:
    """What the tests compare, read at one stage."""

    plan: Plan  # as `migrate plan` reads it
    uids: dict[str, set[str]]  # kind -> uids
    pods: dict[str, str]  # running pod name -> uid
    webhooks: list[str]  # every webhook configuration
    crd: dict[str, Any]  # workloads.kueue.x-k8s.io


@dataclass(frozen=True)
class Migrated:
    printed: str  # what `batchgate migrate plan` printed
    plan_status: int
    refused_before: str  # what kube-apiserver said to batchgate's CRD before the storage move
    old_webhooks: list[tuple[str, str]]
    before: Snapshot  # Kueue and the AppWrapper controller running
    at_apply: list[str]  # webhook configurations when apply returned
    after: Snapshot  # batchgate installed and running
    rolled_back: Snapshot  # after `migrate rollback` and the old controllers installed again
    cluster: RealCluster  # still running the old controllers, while the tests run


def _uids(kubectl: Kubectl) -> dict[str, set[str]]:
    return {kind: {o["metadata"]["uid"] for o in kubectl.get_json(kind, "-A")["items"]} for kind in KINDS}


def _running_pods(kubectl: Kubectl) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in kubectl.get_json("pods", "-n", NAMESPACE)["items"]
            if (p.get("status") or {}).get("phase") == "Running"}


def _webhook_names(kubectl: Kubectl) -> list[str]:
    return sorted(c["metadata"]["name"] for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
                  for c in kubectl.get_json(kind)["items"])


def _admitted_count(kubectl: Kubectl) -> int:
    return sum(any(c["type"] == "Admitted" and c["status"] == "True"
                   for c in (w.get("status") or {}).get("conditions") or [])
               for w in kubectl.get_json("workloads.v1beta1.kueue.x-k8s.io", "-n", NAMESPACE)["items"])


def _live_work(kubectl: Kubectl) -> None:
    """The queues, then the AppWrapper and a Job admitted and Running, then two Jobs that wait."""
    kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump_all(QUEUES))
    kubectl.run("apply", "-f", "-", stdin=json.dumps(_appwrapper("wrapped")))
    kubectl.run("apply", "-f", "-", stdin=json.dumps(_job("first")))
    eventually(lambda: _admitted_count(kubectl) == 2, "Kueue admits the AppWrapper and the first Job", 180)
    eventually(lambda: (kubectl.get_json("appwrapper", "-n", NAMESPACE, "wrapped").get("status") or {}).get(
        "phase") == "Running", "the AppWrapper controller runs the AppWrapper", 180)
    eventually(lambda: len(_running_pods(kubectl)) == 2, "the AppWrapper's pod and the Job's pod Running", 120)
    for name in ("second", "third"):
        kubectl.run("apply", "-f", "-", stdin=json.dumps(_job(name)))
    eventually(lambda: len(kubectl.get_json("workloads.v1beta1.kueue.x-k8s.io", "-n", NAMESPACE)["items"]) == 4,
               "Kueue makes a Workload for each pending Job", 60)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migrated]:
    """A real cluster of its own with the old controllers and live work, migrated, then rolled
    back: every stage read into a Snapshot, so the tests hold in any order."""
    if PEERS is None:
        pytest.skip(PEERS_NOT_BUILT)
    if port_taken(peers.APPWRAPPER_WEBHOOK_PORT, host="0.0.0.0"):
        held = ", ".join(listeners(peers.APPWRAPPER_WEBHOOK_PORT))
        pytest.skip(f"port {peers.APPWRAPPER_WEBHOOK_PORT} is taken ({held}), where the AppWrapper controller must serve")
    workdir = tmp_path_factory.mktemp("migrate")
    made, kubectl = clusters.make(workdir, users_file=DEMO_MANIFESTS / "users.yaml", kube="real",
                                  nodes=nodes_from_flags(2, "16", "64Gi", 0), run_images=[local_image()])
    assert isinstance(made, RealCluster)
    with made, peers.Peers(made, PEERS) as old:
        old_webhooks: list[tuple[str, str]] = []
        for layout, start in ((peers.APPWRAPPER, old.start_appwrapper), (peers.KUEUE, old.start_kueue)):
            start()
            objects = old.render(layout)
            old_webhooks += peers.webhook_configurations(objects)
            # the manager's Deployment, as upstream installs it: its pod is simulated, the manager
            # itself is the local process, stopped when apply has scaled the Deployment to 0
            kubectl.run("apply", "-f", "-", stdin=json.dumps(peers.upstream_deployment(objects, layout)))
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
        _live_work(kubectl)

        kube = connect(str(made.kubeconfig), "admin")

        def snapshot() -> Snapshot:
            return Snapshot(plan_migration(read(kube), SERVED), _uids(kubectl), _running_pods(kubectl),
                            _webhook_names(kubectl), kubectl.get_json("crd", "workloads.kueue.x-k8s.io"))

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            plan_status = migrate_cli.main(["plan", "--kubeconfig", str(made.kubeconfig), "--context", "admin"])
        refused = kubectl.run("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f",
                              str(BATCHGATE_CRD), check=False)
        before = snapshot()

        def stop(ref: Ref) -> None:
            migration.scale_down(ref)
            program = {peers.KUEUE.namespace: "kueue", peers.APPWRAPPER.namespace: "appwrapper"}[ref.namespace]
            old.running.pop(program).program.stop()

        migration = Migration(kube, stop=stop, say=lambda line: None)
        migration.run(before.plan)
        at_apply = _webhook_names(kubectl)
        install_product(kubectl, force_conflicts=True)  # docs/install.md, "Moving from MLBatch"
        eventually(lambda: _admitted_count(kubectl) == 2, "the admitted Workloads still admitted under batchgate")
        after = snapshot()

        Migration(kube, say=lambda line: None).run(plan_rollback(read(kube)))  # batchgate's pods are real: scaled
        old.start_appwrapper()  # and installed again from upstream's manifests, as docs/install.md says
        old.start_kueue()
        eventually(lambda: _queue_counts(kubectl) == (2, 2), "Kueue counts 2 admitted and 2 pending Workloads again")
        yield Migrated(printed.getvalue(), plan_status, refused.stderr, old_webhooks, before, at_apply, after,
                       snapshot(), made)


def _queue_counts(kubectl: Kubectl) -> tuple[int, int]:
    status = kubectl.get_json("clusterqueues.v1beta1.kueue.x-k8s.io", "migrate-cq").get("status") or {}
    return status.get("admittedWorkloads", 0), status.get("pendingWorkloads", 0)


def test_the_plan_takes_over_every_queue_and_workload_and_names_the_storage_move(migrated: Migrated) -> None:
    plan = migrated.before.plan
    assert plan.ready, plan.blocked_line()
    assert {str(f.ref) for f in plan.take_over} >= {"ClusterQueue migrate-cq", "LocalQueue team-a/team",
                                                     "ResourceFlavor migrate-flavor", "AppWrapper team-a/wrapped"}
    assert len(plan.admitted) == 2 and len(plan.pending) == 2
    assert "workloads.kueue.x-k8s.io" in {m.crd for m in plan.storage}
    assert sorted(map(str, plan.managers_to_stop)) == ["Deployment appwrapper-system/appwrapper-controller-manager",
                                                       "Deployment kueue-system/kueue-controller-manager"]


def test_migrate_plan_prints_what_it_takes_over_and_the_steps_apply_will_take(migrated: Migrated) -> None:
    assert migrated.plan_status == 0, migrated.printed
    assert "  ClusterQueue migrate-cq: served as it is" in migrated.printed
    assert "  1. store every clusterqueues.kueue.x-k8s.io object in v1beta1 (stored now: v1beta2)" in migrated.printed
    assert "blocks: none" in migrated.printed


def test_kube_apiserver_refuses_batchgates_crd_while_a_version_it_drops_is_stored(migrated: Migrated) -> None:
    assert ("v1beta2 was previously a storage version, and must remain in spec.versions until a storage migration "
            "ensures no data remains persisted in v1beta2 and removes v1beta2 from status.storedVersions"
            in " ".join(migrated.refused_before.split())), migrated.refused_before


def test_the_old_webhooks_are_gone_before_batchgates_are_installed(migrated: Migrated) -> None:
    old = {name for _, name in migrated.old_webhooks}
    assert old and not old & set(migrated.at_apply) and not old & set(migrated.after.webhooks)
    assert not [name for name in migrated.at_apply if name.startswith("batchgate")]


@pytest.mark.parametrize("stage", ["after", "rolled_back"],
                         ids=["under batchgate", "after the rollback to Kueue and the AppWrapper controller"])
def test_nothing_is_lost_admitted_work_keeps_its_pods_and_pending_work_its_order(migrated: Migrated,
                                                                                 stage: str) -> None:
    now: Snapshot = getattr(migrated, stage)
    assert now.uids == migrated.before.uids
    assert now.plan.admitted == migrated.before.plan.admitted
    assert now.pods == migrated.before.pods
    assert now.plan.pending == migrated.before.plan.pending


def test_every_kueue_crd_is_left_with_the_one_version_batchgate_serves(migrated: Migrated) -> None:
    assert migrated.after.crd["status"]["storedVersions"] == ["v1beta1"]
    assert [v["name"] for v in migrated.after.crd["spec"]["versions"]] == ["v1beta1"]


def test_the_rollback_removes_batchgates_webhooks_and_brings_back_the_old_ones(migrated: Migrated) -> None:
    assert not [name for name in migrated.rolled_back.webhooks if name.startswith("batchgate")]
    assert {name for _, name in migrated.old_webhooks} <= set(migrated.rolled_back.webhooks)


def test_a_second_appwrapper_controller_is_refused_in_one_line_while_the_first_holds_its_port(
        migrated: Migrated) -> None:
    """The peers' own check (realcluster/peers.py), on this cluster's AppWrapper controller, installed again."""
    with pytest.raises(peers.PeerError) as caught, peers.Peers(migrated.cluster, PEERS) as second:
        second.start_appwrapper()
    assert str(caught.value).startswith("port 9443 is taken ([::]:9443): the AppWrapper controller always serves")
    assert "\n" not in str(caught.value)
