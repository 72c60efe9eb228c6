"""The peers, Kueue's manager and the AppWrapper controller, installed from upstream's own manifests
and run as local processes on their own real cluster: what is changed from upstream's install
(pure, tables), then Kueue admitting a Job and an AppWrapper reaching Running through Kueue."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.sim.endpoints import ADDRESS_ANNOTATION
from realcluster import peers
from realcluster.cluster import RealCluster
from realcluster.peers import KUEUE, PeerError, Ports
from realcluster.processes import listeners, port_taken
from tests.e2e.test_install import eventually
from tests.realcluster_fixtures import PEERS, PEERS_NOT_BUILT, admin_kubectl, get_object, new_real_cluster

# the AppWrapper controller listens on :9443 on every address, which a stand-in cluster's webhook pod
# at 127.x.y.z:9443 blocks: these tests run before any test that may start one (tests/conftest.py)
pytestmark = pytest.mark.binds_every_address

Kubectl = Callable[..., str]
PORTS = Ports(webhook=40001, health=40002, metrics=40003)

UPSTREAM: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": "workloads.kueue.x-k8s.io"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
     "data": {"controller_manager_config.yaml": yaml.safe_dump({
         "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
         "health": {"healthProbeBindAddress": ":8081"}, "webhook": {"port": 9443},
         "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
         "clientConnection": {"qps": 50, "burst": 100},
         "integrations": {"frameworks": ["batch/job", "pod", "workload.codeflare.dev/appwrapper"]}})}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kueue-webhook-service", "namespace": "kueue-system"},
     "spec": {"ports": [{"port": 443, "targetPort": 9443}], "selector": {"control-plane": "controller-manager"}}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
     "spec": {"template": {"spec": {"containers": [
         {"name": "manager", "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2"]}]}}}},
    {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
     "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"}},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
     "metadata": {"name": "kueue-mutating-webhook-configuration"}, "webhooks": []},
]


def test_the_install_is_upstreams_less_what_runs_the_manager_in_a_pod() -> None:
    kinds = [o["kind"] for o in peers.installed_objects(UPSTREAM, KUEUE, "127.0.0.1:40001")]
    assert kinds == ["Namespace", "CustomResourceDefinition", "Service", "MutatingWebhookConfiguration"]


def test_a_stopped_peer_takes_its_webhook_configurations_with_it() -> None:
    assert peers.webhook_configurations(UPSTREAM) == [("MutatingWebhookConfiguration",
                                                       "kueue-mutating-webhook-configuration")]


def test_the_webhook_service_is_routed_to_the_local_process_and_keeps_its_selector() -> None:
    service = next(o for o in peers.installed_objects(UPSTREAM, KUEUE, "127.0.0.1:40001") if o["kind"] == "Service")
    assert service["metadata"]["annotations"] == {ADDRESS_ANNOTATION: "127.0.0.1:40001"}
    assert service["spec"]["selector"] == {"control-plane": "controller-manager"}
    assert "annotations" not in UPSTREAM[3]["metadata"]


def test_the_managers_arguments_are_upstreams_less_its_config_path() -> None:
    assert peers.upstream_args(UPSTREAM, KUEUE) == ["--zap-log-level=2"]


def test_kueues_config_is_upstreams_with_what_a_local_process_needs(tmp_path: Path) -> None:
    config = peers.kueue_config(peers.upstream_config(UPSTREAM, KUEUE), PORTS, tmp_path, ["batch/job"])
    assert config["leaderElection"] == {"leaderElect": False, "resourceName": "c1f6bfd2.kueue.x-k8s.io"}
    assert config["webhook"] == {"port": 40001, "host": "127.0.0.1", "certDir": str(tmp_path)}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:40002"}
    assert config["metrics"] == {"bindAddress": "127.0.0.1:40003"}
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert config["featureGates"] == {"VisibilityOnDemand": False}
    assert config["clientConnection"] == {"qps": 50, "burst": 100}
    assert "fairSharing" not in config


def test_kueues_fair_sharing_is_its_v1beta2_block_with_both_strategies(tmp_path: Path) -> None:
    base = {**peers.upstream_config(UPSTREAM, KUEUE), "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}
    on = peers.kueue_config(base, PORTS, tmp_path, ["batch/job"], fair_sharing=True)
    assert on["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    assert "fairSharing" not in peers.kueue_config(base, PORTS, tmp_path, ["batch/job"], fair_sharing=False)


def test_feature_gates_asked_for_join_upstreams_and_the_visibility_api_stays_off(tmp_path: Path) -> None:
    base = {**peers.upstream_config(UPSTREAM, KUEUE), "featureGates": {"TopologyAwareScheduling": True}}
    config = peers.kueue_config(base, PORTS, tmp_path, ["batch/job"],
                                feature_gates={"SchedulingEquivalenceHashing": True})
    assert config["featureGates"] == {"TopologyAwareScheduling": True, "VisibilityOnDemand": False,
                                      "SchedulingEquivalenceHashing": True}


def test_an_integration_upstream_does_not_ship_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(PeerError) as caught:
        peers.kueue_config(peers.upstream_config(UPSTREAM, KUEUE), PORTS, tmp_path, ["batch/job", "batch/cronjob"])
    assert str(caught.value) == ("Kueue has no integration 'batch/cronjob': choose from batch/job, pod, "
                                 "workload.codeflare.dev/appwrapper")


def test_the_appwrapper_config_turns_webhooks_on_and_leader_election_off(tmp_path: Path) -> None:
    base = {"controllerManager": {"health": {"bindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
                                  "leaderElection": True}}
    config = peers.appwrapper_config(base, PORTS, tmp_path)
    assert config == {"controllerManager": {"health": {"bindAddress": "127.0.0.1:40002"},
                                            "metrics": {"bindAddress": "127.0.0.1:40003"}, "leaderElection": False},
                      "webhooksEnabled": True, "certManagement": {"certificateDir": str(tmp_path)}}


def test_a_changed_upstream_layout_is_one_line_naming_the_file_to_update() -> None:
    with pytest.raises(PeerError, match=r"^upstream's install has no Service kueue-webhook-service: .*peers\.py$"):
        peers.installed_objects([o for o in UPSTREAM if o["kind"] != "Service"], KUEUE, "127.0.0.1:1")


def test_peers_not_built_is_one_line_naming_make_peers(tmp_path: Path) -> None:
    cluster = RealCluster(tmp_path, binaries={})  # not started: the peers are looked for first
    with pytest.raises(PeerError, match=r"^Kueue and the AppWrapper controller are not built: run `make peers`"):
        peers.Peers(cluster, cache=tmp_path / "empty-cache")


# on a real cluster ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def peer_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RealCluster, Kubectl]]:
    """A real cluster of its own (the peers' CRDs replace any other kueue.x-k8s.io ones) with the
    AppWrapper controller and then Kueue started on it."""
    if PEERS is None:
        pytest.skip(PEERS_NOT_BUILT)
    if port_taken(peers.APPWRAPPER_WEBHOOK_PORT, host="0.0.0.0"):  # another run's peers on this machine
        held = ", ".join(listeners(peers.APPWRAPPER_WEBHOOK_PORT))
        pytest.skip(f"port {peers.APPWRAPPER_WEBHOOK_PORT} is taken ({held}), where the AppWrapper controller must serve")
    with new_real_cluster(tmp_path_factory.mktemp("peers")) as cluster, peers.Peers(cluster, PEERS) as running:
        running.start_appwrapper()
        running.start_kueue()
        yield cluster, admin_kubectl(cluster, tmp_path_factory.mktemp("peers-kubectl-cache"))


def _queues(kubectl: Kubectl) -> str:
    """A namespace with a LocalQueue of a ClusterQueue of one flavor, in Kueue's v1beta1 (which
    batchgate serves), so that Kueue's conversion webhook is on the path."""
    suffix = uuid.uuid4().hex[:8]
    namespace = f"peer-{suffix}"
    kubectl("create", "namespace", namespace)
    objects = [
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": f"flavor-{suffix}"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": f"cq-{suffix}"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
             {"name": f"flavor-{suffix}", "resources": [{"name": "cpu", "nominalQuota": "4"},
                                                        {"name": "memory", "nominalQuota": "8Gi"}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
         "metadata": {"name": "team", "namespace": namespace}, "spec": {"clusterQueue": f"cq-{suffix}"}},
    ]
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    return namespace


def _pod_spec() -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "busybox", "command": ["sleep", "600"],
         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}


def _admitted(workloads: dict[str, Any]) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True"
               for w in workloads["items"] for c in (w.get("status") or {}).get("conditions") or [])


def _job(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {"suspend": True, "template": {"spec": _pod_spec()}}}


def _appwrapper(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": "wrapped", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {"components": [{"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker"},
                                                  "spec": _pod_spec()}}]}}


def _unsuspended(kubectl: Kubectl, namespace: str) -> bool:
    return get_object(kubectl, "job", "train", "-n", namespace)["spec"]["suspend"] is False


def _running(kubectl: Kubectl, namespace: str) -> bool:
    return (get_object(kubectl, "appwrapper", "wrapped", "-n", namespace).get("status") or {}).get("phase") == "Running"


@pytest.mark.realcluster
@pytest.mark.timeout(900)
@pytest.mark.parametrize("make, then, what, seconds", [
    (_job, _unsuspended, "Kueue unsuspends the admitted Job", 60),
    (_appwrapper, _running, "the AppWrapper controller brings the admitted AppWrapper to Running", 180),
], ids=["Kueue admits a suspended Job of its LocalQueue and unsuspends it",
        "the AppWrapper controller runs an AppWrapper that Kueue admits"])
def test_what_a_local_queue_is_given_kueue_admits_and_its_controller_runs(
        peer_cluster: tuple[RealCluster, Kubectl], make: Callable[[str], dict[str, Any]],
        then: Callable[[Kubectl, str], bool], what: str, seconds: float) -> None:
    _, kubectl = peer_cluster
    namespace = _queues(kubectl)
    kubectl("apply", "-f", "-", input=yaml.safe_dump(make(namespace)))
    eventually(lambda: _admitted(get_object(kubectl, "workloads.v1beta1.kueue.x-k8s.io", "-n", namespace)),
               "Kueue admits the Workload", 120)
    eventually(lambda: then(kubectl, namespace), what, seconds)


@pytest.mark.realcluster
@pytest.mark.timeout(900)
def test_a_second_appwrapper_controller_is_refused_in_one_line_while_the_first_holds_its_port(
        peer_cluster: tuple[RealCluster, Kubectl]) -> None:
    cluster, _ = peer_cluster
    with pytest.raises(PeerError) as caught, peers.Peers(cluster, PEERS) as second:
        second.start_appwrapper()
    assert str(caught.value).startswith("port 9443 is taken ([::]:9443): the AppWrapper controller always serves")
    assert "\n" not in str(caught.value)
