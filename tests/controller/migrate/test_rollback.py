"""`batchgate migrate rollback`: batchgate's webhooks removed, then its managers stopped, and never
while an old controller's webhook is already back beside them."""

from __future__ import annotations

from typing import Any

import pytest

from controller.migrate.plan import ClusterObjects
from controller.migrate.rollback import plan_rollback
from controller.migrate.steps import Blocked, RemoveWebhook, StopManager, describe, steps
from tests.controller.migrate.test_plan import KUEUE, deployment, webhook

GATEWAY = webhook("batchgate-validating-webhook", "batchgate-system", ["workload.codeflare.dev"], batchgate=True)


def ours(name: str) -> dict[str, Any]:
    made = deployment(name, "batchgate-system")
    made["metadata"]["labels"] = {"app.kubernetes.io/part-of": "batchgate"}
    return made


INSTALLED = ClusterObjects(webhooks=[GATEWAY], deployments=[ours("batchgate-webhook"), ours("batchgate-controller")])


def test_rollback_removes_batchgates_webhooks_before_it_stops_its_managers() -> None:
    lines = [describe(s) for s in steps(plan_rollback(INSTALLED))]
    assert lines == ["remove ValidatingWebhookConfiguration batchgate-validating-webhook",
                     "stop Deployment batchgate-system/batchgate-webhook (scale to 0, wait for its pods to go)",
                     "stop Deployment batchgate-system/batchgate-controller (scale to 0, wait for its pods to go)"]
    assert [type(s) for s in steps(plan_rollback(INSTALLED))] == [RemoveWebhook, StopManager, StopManager]


@pytest.mark.parametrize("objects, blocker", [
    pytest.param(ClusterObjects(), "cluster -: batchgate is not installed: nothing to roll back",
                 id="a cluster without batchgate has nothing to roll back"),
    pytest.param(ClusterObjects(webhooks=[GATEWAY, KUEUE]),
                 "ValidatingWebhookConfiguration kueue-validating-webhook-configuration: an old controller's webhook "
                 "is already back beside batchgate's", id="an old webhook back beside batchgate's blocks"),
])
def test_rollback_refuses_in_one_line_naming_the_blocker(objects: ClusterObjects, blocker: str) -> None:
    with pytest.raises(Blocked) as refused:
        steps(plan_rollback(objects))
    assert blocker in str(refused.value) and "\n" not in str(refused.value)
