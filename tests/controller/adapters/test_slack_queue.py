"""The slack ClusterQueue follows node health on the local cluster, with the real controller and kubectl.

An admin labels a node EVICT (as Autopilot would) and cordons another: the slack queue's GPU
lendingLimit shrinks by their GPUs, with an Event on the ClusterQueue; healing them gives it back.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from controller.adapters.kube import RESOURCES, ApiError, KubeClient
from controller.adapters.manager import Controller
from tests.controller.cluster import eventually, kubectl, started_controller

pytestmark = pytest.mark.timeout(120)
CQ = RESOURCES["ClusterQueue"]
GPU = "nvidia.com/gpu"
HEALTH = "autopilot.ibm.com/gpuhealth"


@pytest.fixture(scope="module")
def controller(live_cluster: Any) -> Iterator[Controller]:
    yield from started_controller(live_cluster)


@pytest.fixture(scope="module")
def slack(live_client: KubeClient, controller: Controller) -> Iterator[str]:
    try:
        live_client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": "batchgate-system"}})
    except ApiError as exc:
        assert exc.already_exists
    live_client.create(RESOURCES["ResourceFlavor"], {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
                                                     "metadata": {"name": "default"}})
    live_client.create(CQ, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                            "metadata": {"name": "slack-cluster-queue"}, "spec": {
                                "cohort": "all", "resourceGroups": [{"coveredResources": ["cpu", GPU], "flavors": [
                                    {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "32"},
                                                                      {"name": GPU, "nominalQuota": "16"}]}]}]}})
    live_client.create(RESOURCES["ConfigMap"], {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "batchgate-policy", "namespace": "batchgate-system"},
        "data": {"policy.yaml": "faultTolerance:\n  nodeHealth:\n    slackClusterQueue: slack-cluster-queue\n"}})
    eventually(lambda: controller.policy.fault_tolerance.node_health.slack_cluster_queue, what="the policy to load")
    yield "slack-cluster-queue"


def lending(client: KubeClient, resource: str) -> Any:
    quotas = client.get(CQ, "slack-cluster-queue", None)["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return next(q for q in quotas if q["name"] == resource).get("lendingLimit", "none")


def test_unhealthy_and_cordoned_nodes_shrink_the_slack_queues_lending_and_healing_restores_it(
        live_cluster: Any, live_client: KubeClient, slack: str) -> None:
    config = live_cluster.kubeconfig
    kubectl(config, "label", "node", "node-0", f"{HEALTH}=EVICT")
    eventually(lambda: lending(live_client, GPU) == "8", what=lambda: f"GPU lendingLimit 8, is {lending(live_client, GPU)}")
    assert lending(live_client, "cpu") == "none", "an EVICT label takes only GPUs"
    kubectl(config, "cordon", "node-1")
    eventually(lambda: lending(live_client, GPU) == "0", what="no GPU left to lend")
    eventually(lambda: lending(live_client, "cpu") == "16", what="the cordoned node's CPUs taken out of lending")
    events = kubectl(config, "get", "events", "-n", "default", "--field-selector",
                     f"involvedObject.name={slack},reason=LendingLimitUpdated", "-o",
                     "jsonpath={range .items[*]}{.message}{'\\n'}{end}").stdout
    assert "lendingLimit of nvidia.com/gpu set to 8: 8 unusable on unhealthy or unschedulable nodes" in events, events
    kubectl(config, "uncordon", "node-1")
    kubectl(config, "label", "node", "node-0", f"{HEALTH}-")
    eventually(lambda: (lending(live_client, GPU), lending(live_client, "cpu")) == ("none", "none"),
               what="every limit removed once all nodes are healthy")
