"""The findings about queues, workloads and nodes: each as a table row, ordered by severity."""

from __future__ import annotations

from typing import Any

import pytest

from controller.check import findings as c
from tests.controller.check.builders import codes, node, run_check
from tests.controller.decisions.trace_builders import (
    basic, cluster_queue, flavor, group, local_queue, namespace, quota, workload,
)


@pytest.mark.parametrize("objects, severity, code, subject", [
    pytest.param([cluster_queue("cq", cpu=10), local_queue("lq", "cq")], "error", c.MISSING_FLAVOR,
                 "ClusterQueue cq", id="a ClusterQueue naming a missing ResourceFlavor is an error"),
    pytest.param([flavor(), local_queue("lq", "ghost")], "error", c.MISSING_CLUSTER_QUEUE, "LocalQueue ns/lq",
                 id="a LocalQueue pointing at a missing ClusterQueue is an error"),
    pytest.param([*basic(cpu=10), workload("w", queue="nope", cpu=1)], "error", c.MISSING_LOCAL_QUEUE,
                 "Workload ns/w", id="a pending Workload naming a missing LocalQueue is an error"),
    pytest.param([*basic(cpu=10), workload("w", cpu=1, gpu=1)], "error", c.UNCOVERED_RESOURCE, "Workload ns/w",
                 id="a pending Workload requesting a resource no ClusterQueue covers is an error"),
    pytest.param([*basic(cpu=10), cluster_queue("gpus", group({"default": {"nvidia.com/gpu": 8}})),
                  workload("w", cpu=1, gpu=1)], "error", c.UNCOVERED_RESOURCE, "Workload ns/w",
                 id="a pending Workload requesting a resource only another ClusterQueue covers is an error"),
    pytest.param([flavor(), cluster_queue("cq", group({"default": {"cpu": quota(10, lend=12)}}), cohort="c"),
                  local_queue("lq", "cq")], "error", c.INVALID_CLUSTER_QUEUE, "ClusterQueue cq",
                 id="a ClusterQueue lending more than its nominal quota is invalid"),
    pytest.param([flavor(), cluster_queue("cq", group({"default": {"cpu": quota(10, borrow=2)}})),
                  local_queue("lq", "cq")], "error", c.INVALID_CLUSTER_QUEUE, "ClusterQueue cq",
                 id="a ClusterQueue with a borrowingLimit but no cohort is invalid"),
    pytest.param([*basic(cpu=10), {"kind": "ClusterQueue", "metadata": {"name": "bad"},
                                   "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                       {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "-1"}]}]}]}}],
                 "error", c.INVALID_OBJECT, "ClusterQueue bad",
                 id="a ClusterQueue with a negative quota is reported with its field path"),
    pytest.param([*basic(cpu=10), {"kind": "Node", "metadata": {"name": "n"},
                                   "status": {"allocatable": {"cpu": "lots"}}}],
                 "error", c.INVALID_OBJECT, "Node n", id="a Node with an unparsable allocatable is reported"),
    pytest.param([*basic(cpu=10, stop="HoldAndDrain")], "warning", c.STOPPED_QUEUE, "ClusterQueue cq",
                 id="a stopped ClusterQueue is a warning"),
    pytest.param([flavor(), cluster_queue("cq", cpu=10), local_queue("lq", "cq", stop="Hold")], "warning",
                 c.STOPPED_QUEUE, "LocalQueue ns/lq", id="a stopped LocalQueue is a warning"),
    pytest.param([*basic(cpu=10, selector=None)], "warning", c.NO_NAMESPACE_SELECTOR, "ClusterQueue cq",
                 id="a ClusterQueue without a namespaceSelector admits from no namespace"),
    pytest.param([*basic(cpu=10, selector={"matchLabels": {"team": "x"}}), namespace("ns")], "warning",
                 c.NAMESPACE_NOT_SELECTED, "LocalQueue ns/lq",
                 id="a LocalQueue in a namespace its ClusterQueue does not select is a warning"),
    pytest.param([flavor(), cluster_queue("slack", cpu=10, cohort="c")], "info", c.NO_LOCAL_QUEUE,
                 "ClusterQueue slack", id="a ClusterQueue no LocalQueue points at is noted"),
    pytest.param([*basic(cpu=10), workload("w", admitted_to="gone", cpu=1)], "warning", c.ORPHANED_ADMISSION,
                 "Workload ns/w", id="a Workload holding quota in a missing ClusterQueue is a warning"),
    pytest.param([*basic(cpu=10), workload("w", admitted_to="cq", cpu=1, evicted=True)], "info",
                 c.EVICTION_IN_PROGRESS, "Workload ns/w",
                 id="an evicted Workload still holding quota is noted"),
])
def test_findings(objects: list[dict[str, Any]], severity: str, code: str, subject: str) -> None:
    report = run_check(objects)
    assert (severity, code, subject) in [(f.severity, f.code, f.subject) for f in report.findings]
    assert report.has_errors is (severity == "error" or bool(codes(report, "error")))


def test_a_clean_cluster_has_no_errors_or_warnings() -> None:
    report = run_check([node("n", cpu="10"), *basic(cpu=10), workload("w", admitted_to="cq", cpu=4)])
    assert codes(report, "error") == [] and codes(report, "warning") == []
    assert not report.has_errors


def test_findings_are_ordered_errors_then_warnings_then_info() -> None:
    report = run_check([flavor(), cluster_queue("slack", cpu=10, cohort="c"), cluster_queue("cq", cpu=10, stop="Hold"),
                        local_queue("lq", "ghost")])
    severities = [f.severity for f in report.findings]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    assert severities[0] == "error" and "info" in severities


def test_without_any_node_capacity_is_not_compared_but_said_so() -> None:
    report = run_check(basic(cpu=10))
    assert codes(report) == [c.NO_NODES]
    assert not report.has_errors


def test_objects_of_other_kinds_are_counted_so_a_misspelt_kind_shows() -> None:
    report = run_check([node("n", cpu="10"), *basic(cpu=10), {"kind": "Clusterqueue", "metadata": {"name": "x"}},
                        {"kind": "Deployment", "metadata": {"name": "d"}}])
    [ignored] = [f for f in report.findings if f.code == c.IGNORED_OBJECTS]
    assert ignored.reason == "objects of kinds the check does not read: Clusterqueue (1), Deployment (1)"
