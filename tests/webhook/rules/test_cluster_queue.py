"""Kueue's ClusterQueue checks, taken over by the gateway: denied with the field path."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.policy import DEFAULT_POLICY, parse_policy
from tests.builders import a_request
from webhook.rules import validate


def cluster_queue(cohort: str | None = "all", **limits: Any) -> dict[str, Any]:
    resource: dict[str, Any] = {"name": "cpu", "nominalQuota": "20", **limits}
    spec: dict[str, Any] = {"resourceGroups": [{"coveredResources": ["cpu"],
                                                "flavors": [{"name": "default", "resources": [resource]}]}]}
    if cohort is not None:
        spec["cohort"] = cohort
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": "team-a"}, "spec": spec}


@pytest.mark.parametrize(
    "obj, message",
    [
        pytest.param(cluster_queue(lendingLimit="25"),
                     "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: "
                     "must be less than or equal to the nominalQuota",
                     id="lending more than the nominal quota"),
        pytest.param(cluster_queue(cohort=None, borrowingLimit="5"),
                     "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: must be nil when cohort is empty",
                     id="borrowing without a cohort"),
        pytest.param(cluster_queue(nominalQuota="lots"),
                     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
                     id="a quota that is not a quantity"),
        pytest.param({**cluster_queue(), "spec": {**cluster_queue()["spec"],
                                                  "preemption": {"reclaimWithinCohort": "Never",
                                                                 "borrowWithinCohort": {"policy": "LowerPriority"}}}},
                     "spec.preemption: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                     id="borrowing preemption without reclaim"),
    ],
)
def test_an_invalid_cluster_queue_is_denied_with_its_field_path(obj: dict[str, Any], message: str) -> None:
    verdict = validate(a_request(obj, namespace="", user="admin", groups=("system:masters",)), DEFAULT_POLICY)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 403, "InvalidClusterQueue")
    assert message in verdict.message


def test_exempt_admins_are_checked_too_and_a_valid_queue_passes() -> None:
    policy = parse_policy("exempt:\n  groups: [system:masters]\n")
    admin = dict(namespace="", user="admin", groups=("system:masters",))
    assert not validate(a_request(cluster_queue(lendingLimit="25"), **admin), policy).allowed
    assert validate(a_request(cluster_queue(lendingLimit="5", borrowingLimit="10"), **admin), policy).allowed


def test_an_update_is_checked_like_a_create() -> None:
    verdict = validate(a_request(cluster_queue(lendingLimit="25"), namespace="", operation="UPDATE",
                                 old=cluster_queue()), DEFAULT_POLICY)
    assert verdict.reason == "InvalidClusterQueue"
