"""The peers, Kueue's manager and the AppWrapper controller, installed from upstream's own manifests
and run as local processes on a real cluster: what is changed from upstream's install (pure,
tables). Running, they are proven by tests/realcluster/test_migrate.py, whose cluster has Kueue
admit a Job and an AppWrapper, the AppWrapper controller run it, and a second AppWrapper
controller refused while the first holds its port; and by the side-by-side benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.sim.endpoints import ADDRESS_ANNOTATION
from realcluster import peers
from realcluster.cluster import RealCluster
from realcluster.peers import KUEUE, PeerError, Ports

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
