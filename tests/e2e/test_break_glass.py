"""Break-glass: with the gateway stopped, a cluster admin can still repair batchgate's own
configuration, and no one else gets past the fail-closed webhooks.

The shipped webhook configurations guard the policy ConfigMap and ClusterQueues with
`failurePolicy: Fail`; their matchConditions skip the gateway for a member of system:masters
whose object carries `batchgate.dev/break-glass` (docs/webhook.md). Everything goes through the
real kubectl, as the admin and as alice.
"""

from __future__ import annotations

import json
from typing import Iterator

import pytest
import yaml

from batchgate import keys
from tests.e2e.stack import USER, Stack, running_stack

pytestmark = pytest.mark.timeout(120)
SYSTEM = "batchgate-system"


def policy_configmap(text: str, *, break_glass: bool) -> str:
    meta: dict = {"name": "batchgate-policy", "namespace": SYSTEM}
    if break_glass:
        meta["annotations"] = {keys.BREAK_GLASS_ANNOTATION: "gateway down, restoring the queue"}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"policy.yaml": text}})


CLUSTER_QUEUE = {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": "cq"},
                 "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                     {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}]}}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The shipped webhooks registered, the configuration created, then the gateway stopped."""
    with running_stack(tmp_path_factory.mktemp("break-glass")) as stack:
        stack.kubectl("apply", "-f", "-", input=policy_configmap("queues: {defaultQueueName: q-one}\n",
                                                                  break_glass=False))
        # Two queues, so the test that breaks the glass on one leaves the other as the fail-closed test needs it.
        glass = {**CLUSTER_QUEUE, "metadata": {"name": "glass"}}
        stack.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([CLUSTER_QUEUE, glass]))
        assert stack.gateway.stop() is not None
        yield stack


def test_without_the_gateway_the_configuration_webhooks_fail_closed(stopped: Stack) -> None:
    edit = stopped.kubectl("apply", "-f", "-", input=policy_configmap("{}\n", break_glass=False), check=False)
    assert edit.returncode != 0 and "policy.validate.batchgate.dev" in edit.stderr
    label = stopped.kubectl("label", "clusterqueue", "cq", "team=a", check=False)
    assert label.returncode != 0 and "clusterqueues.validate.batchgate.dev" in label.stderr


def test_an_admin_repairs_the_policy_configmap_by_breaking_the_glass(stopped: Stack) -> None:
    text = "queues: {defaultQueueName: q-repaired}\n"
    stopped.kubectl("apply", "-f", "-", input=policy_configmap(text, break_glass=True))
    stored = json.loads(stopped.kubectl("get", "configmap", "batchgate-policy", "-n", SYSTEM, "-o", "json").stdout)
    assert stored["data"]["policy.yaml"] == text


def test_an_admin_labels_a_cluster_queue_by_breaking_the_glass(stopped: Stack) -> None:
    stopped.kubectl("annotate", "clusterqueue", "glass", f"{keys.BREAK_GLASS_ANNOTATION}=gateway down")
    stopped.kubectl("label", "clusterqueue", "glass", "team=b")
    labels = json.loads(stopped.kubectl("get", "clusterqueue", "glass", "-o", "json").stdout)["metadata"]["labels"]
    assert labels["team"] == "b"


def test_the_glass_breaks_only_for_cluster_admins(stopped: Stack) -> None:
    # alice administers queues (the shipped batchgate-admin role), so RBAC lets her request through
    # to the webhook; she is no cluster admin, so the glass does not break for her.
    stopped.kubectl("create", "clusterrolebinding", "queue-admin-alice", "--clusterrole=batchgate-admin",
                    f"--user={USER}")
    queue = {**CLUSTER_QUEUE, "metadata": {"name": "alices", "annotations": {keys.BREAK_GLASS_ANNOTATION: "me too"}}}
    done = stopped.kubectl("create", "-f", "-", input=yaml.safe_dump(queue), user=USER, check=False)
    assert done.returncode != 0 and "clusterqueues.validate.batchgate.dev" in done.stderr
