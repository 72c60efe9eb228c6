"""Quota admission on the local cluster with the real controller: jobs beyond the quota wait with
the reason, a finished job lets the next one in, a higher-priority job preempts, ClusterQueue
status and metrics follow, and kubectl tells the story."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from controller.adapters.kube import RESOURCES, ApiError, KubeClient
from controller.adapters.manager import Controller
from controller.adapters.metrics import ProbeServer
from tests.controller.builders import a_job
from tests.controller.cluster import eventually, kubectl, make_team, started_controller
from tests.controller.adapters.test_jobs import cond, workload_of

pytestmark = pytest.mark.timeout(120)
JOBS, WL, CQ, LQ = RESOURCES["Job"], RESOURCES["Workload"], RESOURCES["ClusterQueue"], RESOURCES["LocalQueue"]
KUEUE = "kueue.x-k8s.io/v1beta1"


@pytest.fixture(scope="module")
def controller(cluster: Any) -> Iterator[Controller]:
    yield from started_controller(cluster)


@pytest.fixture
def team(client: KubeClient, controller: Controller) -> dict[str, str]:
    """A namespace with LocalQueue `default-queue` on its own ClusterQueue of 4 cpu (flavor `default`)."""
    return make_team(client, preemption={"withinClusterQueue": "LowerPriority"})


def submit(client: KubeClient, ns: str, name: str, cpu: str, **kw: Any) -> dict[str, Any]:
    job = a_job(name, parallelism=1, cpu=cpu, **kw)
    job["metadata"]["namespace"] = ns
    job["metadata"].pop("uid")
    return client.create(JOBS, job)


def running(client: KubeClient, ns: str, name: str) -> bool:
    return client.get(JOBS, name, ns)["spec"]["suspend"] is False


def reason(client: KubeClient, job: dict[str, Any]) -> str:
    wl = workload_of(client, "Job", job) or {}
    return next((c["message"] for c in wl.get("status", {}).get("conditions", []) if c["type"] == "QuotaReserved"), "")


def test_work_beyond_the_quota_waits_with_its_reason_and_runs_when_room_frees(
        cluster: Any, client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    ns, cq = team["ns"], team["cq"]
    first = submit(client, ns, "first", "3")
    eventually(lambda: running(client, ns, "first"), what="the first job to be admitted and started")
    second = submit(client, ns, "second", "2")
    message = eventually(lambda: reason(client, second), what="the second job's pending reason")
    assert message == "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed"
    assert not running(client, ns, "second")

    status = eventually(lambda: (s := client.get(CQ, cq, None).get("status") or {}).get("pendingWorkloads") == 1 and s,
                        what="the ClusterQueue status")
    assert (status["reservingWorkloads"], status["admittedWorkloads"]) == (1, 1)
    assert status["flavorsUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "3", "borrowed": "0"}]}]
    table = kubectl(cluster.kubeconfig, "get", "cq", cq).stdout.splitlines()
    assert table[1].split()[-1] == "1", "kubectl get cq shows one pending workload"
    lq = eventually(lambda: (s := (client.get(LQ, "default-queue", ns).get("status") or {})).get("pendingWorkloads") == 1 and s,
                    what="the LocalQueue status")
    assert (lq["reservingWorkloads"], lq["admittedWorkloads"]) == (1, 1)
    assert lq["flavorUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "3"}]}]

    client.patch(JOBS, "first", ns, {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "Done", "message": "done"}]}}, subresource="status")
    eventually(lambda: running(client, ns, "second"), what="the second job once the first finished")
    assert cond(workload_of(client, "Job", first), "Finished") == "True"
    wl = workload_of(client, "Job", second)
    assert wl["status"]["admission"]["podSetAssignments"] == [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 1}]
    described = kubectl(cluster.kubeconfig, "describe", "workload", wl["metadata"]["name"], "-n", ns).stdout
    assert "Quota reserved in ClusterQueue " + cq in described
    assert "insufficient unused quota for cpu in flavor default" in described, "the wait is part of the story"


def test_a_higher_priority_job_preempts_and_the_victim_waits_again(
        client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    ns = team["ns"]
    client.create(RESOURCES["WorkloadPriorityClass"], {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
                                                       "metadata": {"name": f"high-{ns}"}, "value": 1000})
    low = submit(client, ns, "low", "4")
    eventually(lambda: running(client, ns, "low"),
               what=lambda: f"the low-priority job to run; its Workload: {workload_of(client, 'Job', low)}")
    high = submit(client, ns, "high", "4", labels={"kueue.x-k8s.io/priority-class": f"high-{ns}"})
    eventually(lambda: running(client, ns, "high"), timeout=20, what="the high-priority job to run")
    assert not running(client, ns, "low")
    victim = workload_of(client, "Job", low)
    assert cond(victim, "Evicted") == "True" and cond(victim, "Preempted") == "True"
    (preempted,) = [c for c in victim["status"]["conditions"] if c["type"] == "Preempted"]
    assert preempted["reason"] == "InClusterQueue"
    assert preempted["message"] == (f"Preempted to accommodate a workload (UID: {workload_of(client, 'Job', high)['metadata']['uid']})"
                                    " due to prioritization in the ClusterQueue")
    assert cond(victim, "QuotaReserved") == "False" and "admission" not in victim["status"]


def test_metrics_count_admissions_pending_and_evictions(client: KubeClient, controller: Controller,
                                                         team: dict[str, str]) -> None:
    ns, cq = team["ns"], team["cq"]
    submit(client, ns, "big", "4")
    submit(client, ns, "waits", "4")
    eventually(lambda: running(client, ns, "big"))
    probes = ProbeServer(controller.metrics, controller.healthy, controller.ready, "127.0.0.1", 0)
    probes.start()
    try:
        body = eventually(lambda: (t := requests.get(f"http://127.0.0.1:{probes.port}/metrics", timeout=5).text)
                          and f'batchgate_pending_workloads{{cluster_queue="{cq}",status="inadmissible"}} 1.0' in t and t,
                          what="the pending gauge")
        assert f'batchgate_admitted_workloads_total{{cluster_queue="{cq}"}} 1.0' in body
        assert "batchgate_admission_cycle_duration_seconds_count" in body
        assert requests.get(f"http://127.0.0.1:{probes.port}/readyz", timeout=5).status_code == 200
    finally:
        probes.stop()


def test_a_job_that_cannot_preempt_on_the_first_flavor_runs_on_the_next(
        cluster: Any, client: KubeClient, controller: Controller) -> None:
    """Kueue's "Should try next flavor if can't preempt on first" (test/integration/scheduler/
    scheduler_test.go), with the real controller: the third job's first attempt stops at the full
    on-demand flavor (whenCanPreempt: Preempt, no lower-priority victim), leaving spot untried;
    it stays at the head of the BestEffortFIFO queue and the next cycle admits it on spot."""
    suffix = uuid.uuid4().hex[:6]
    ns, cq, on_demand, spot = f"flavors-{suffix}", f"prod-{suffix}", f"on-demand-{suffix}", f"spot-{suffix}"
    client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for flavor in (on_demand, spot):
        client.create(RESOURCES["ResourceFlavor"], {"apiVersion": KUEUE, "kind": "ResourceFlavor",
                                                    "metadata": {"name": flavor}, "spec": {"nodeLabels": {"pool": flavor}}})
    client.create(CQ, {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": {
        "namespaceSelector": {}, "cohort": f"all-{suffix}", "preemption": {"withinClusterQueue": "LowerPriority"},
        "flavorFungibility": {"whenCanPreempt": "Preempt"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": on_demand, "resources": [{"name": "cpu", "nominalQuota": "2"}]},
            {"name": spot, "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}})
    client.create(LQ, {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "default-queue", "namespace": ns},
                       "spec": {"clusterQueue": cq}})
    first, second = submit(client, ns, "wl-1", "1"), submit(client, ns, "wl-2", "1")
    eventually(lambda: running(client, ns, "wl-1") and running(client, ns, "wl-2"), timeout=20,
               what="the first two jobs to run")
    third = submit(client, ns, "wl-3", "1")
    eventually(lambda: running(client, ns, "wl-3"), timeout=20,
               what=lambda: f"the third job to run; its Workload: {workload_of(client, 'Job', third)}")
    flavors = {name: workload_of(client, "Job", job)["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"]
               for name, job in (("wl-1", first), ("wl-2", second), ("wl-3", third))}
    assert flavors == {"wl-1": on_demand, "wl-2": on_demand, "wl-3": spot}
    assert client.get(JOBS, "wl-3", ns)["spec"]["template"]["spec"]["nodeSelector"] == {"pool": spot}
    for job in (first, second):
        assert cond(workload_of(client, "Job", job), "Evicted") != "True", "nothing was preempted"
    table = kubectl(cluster.kubeconfig, "get", "workloads", "-n", ns).stdout
    assert table.count(f" {cq} ") == 3, table


def test_a_cluster_queue_written_past_the_gateway_is_checked_again_and_the_last_good_one_kept(
        client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    """Break-glass edits skip the gateway. What the CRD's own validation rules forbid (a borrowing
    limit without a cohort) the API server still refuses; what only Kueue's webhook checks (a
    flavor's resource not named as its coveredResources, pkg/webhooks/clusterqueue_webhook.go
    validateFlavorQuotas: "must match the name in coveredResources") is stored, and must not reach
    the quota book."""
    def flavors(resource: str, **limits: str) -> dict[str, Any]:
        quota = [{"name": resource, "nominalQuota": "1", **limits}]
        return {"spec": {"resourceGroups": [{"coveredResources": ["cpu"],
                                             "flavors": [{"name": "default", "resources": quota}]}]}}

    with pytest.raises(ApiError) as refused:
        client.patch(CQ, team["cq"], None, flavors("cpu", borrowingLimit="1"))
    assert (refused.value.status, refused.value.message) == (
        422, f'ClusterQueue.kueue.x-k8s.io "{team["cq"]}" is invalid: spec: Invalid value: "object": '
             "borrowingLimit must be nil when cohort is empty")
    client.patch(CQ, team["cq"], None, flavors("memory"))

    def warned() -> bool:
        events = client.list(RESOURCES["Event"])["items"]
        return any(e.get("reason") == "InvalidObject" and e["involvedObject"].get("name") == team["cq"]
                   and "coveredResources" in e.get("message", "") for e in events)

    eventually(warned, what="no InvalidObject Event on the ClusterQueue")
    job = submit(client, team["ns"], "three-cpu", "3")
    eventually(lambda: running(client, team["ns"], job["metadata"]["name"]),
               what="the 4-cpu quota of the last good ClusterQueue admits a 3-cpu job")


# What MLBatch's dashboards and alerts read, exactly as kubernetes-sigs/kueue v0.10.2 (the Kueue MLBatch
# deploys) defines it in pkg/metrics/metrics.go (commit bc5b74090af4e54f702c41ffb6971170696f54b2), and
# the AppWrapper controller's counter from project-codeflare/appwrapper internal/metrics/metrics.go.
QUOTA_LABELS = ("cohort", "cluster_queue", "flavor", "resource")
UPSTREAM_METRICS = {
    "kueue_admission_attempts_total": ("counter", ("result",)),
    "kueue_admission_attempt_duration_seconds": ("histogram", ("result",)),
    "kueue_pending_workloads": ("gauge", ("cluster_queue", "status")),
    "kueue_reserving_active_workloads": ("gauge", ("cluster_queue",)),
    "kueue_admitted_active_workloads": ("gauge", ("cluster_queue",)),
    "kueue_quota_reserved_workloads_total": ("counter", ("cluster_queue",)),
    "kueue_quota_reserved_wait_time_seconds": ("histogram", ("cluster_queue",)),
    "kueue_admitted_workloads_total": ("counter", ("cluster_queue",)),
    "kueue_admission_wait_time_seconds": ("histogram", ("cluster_queue",)),
    "kueue_evicted_workloads_total": ("counter", ("cluster_queue", "reason")),
    "kueue_preempted_workloads_total": ("counter", ("preempting_cluster_queue", "reason")),
    "kueue_cluster_queue_status": ("gauge", ("cluster_queue", "status")),
    "kueue_cluster_queue_resource_reservation": ("gauge", QUOTA_LABELS),
    "kueue_cluster_queue_resource_usage": ("gauge", QUOTA_LABELS),
    "kueue_cluster_queue_nominal_quota": ("gauge", QUOTA_LABELS),
    "kueue_cluster_queue_borrowing_limit": ("gauge", QUOTA_LABELS),
    "kueue_cluster_queue_lending_limit": ("gauge", QUOTA_LABELS),
    "kueue_cluster_queue_weighted_share": ("gauge", ("cluster_queue",)),
    "kueue_admission_cycle_preemption_skips": ("gauge", ("cluster_queue",)),
    "appwrapper_phase_total": ("counter", ("namespace", "phase")),
}
SOMETIMES = {"kueue_cluster_queue_weighted_share", "appwrapper_phase_total"}  # fair sharing on; an AppWrapper moved
KUEUE_WAIT_BUCKETS = ("1.0", "2.5", "5.0", "10.0", "20.0", "40.0", "80.0", "160.0", "320.0", "640.0", "1280.0",
                      "2560.0", "5120.0", "10240.0", "+Inf")


def scraped(text: str) -> dict[str, tuple[str, set[frozenset[str]], list[Any]]]:
    """Exposed name -> (type, the label-name sets of its series, its samples), as a scraper reads them."""
    out = {}
    for family in text_string_to_metric_families(text):
        name = family.name + "_total" if family.type == "counter" else family.name
        labels = {frozenset(s.labels) - {"le"} for s in family.samples if not s.name.endswith("_created")}
        out[name] = (family.type, labels, family.samples)
    return out


def test_a_grafana_dashboard_for_kueue_finds_its_metrics_after_an_admission_and_a_preemption(
        client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    ns, cq = team["ns"], team["cq"]
    client.create(RESOURCES["WorkloadPriorityClass"], {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
                                                       "metadata": {"name": f"urgent-{ns}"}, "value": 1000})
    submit(client, ns, "low", "4")
    eventually(lambda: running(client, ns, "low"), what="the low-priority job to run")
    submit(client, ns, "high", "4", labels={"kueue.x-k8s.io/priority-class": f"urgent-{ns}"})
    eventually(lambda: running(client, ns, "high"), timeout=20, what="the high-priority job to run")
    probes = ProbeServer(controller.metrics, controller.healthy, controller.ready, "127.0.0.1", 0)
    probes.start()
    try:
        def families() -> dict[str, tuple[str, set[frozenset[str]], list[Any]]] | None:
            got = scraped(requests.get(f"http://127.0.0.1:{probes.port}/metrics", timeout=5).text)
            pending = {s.labels["status"]: s.value for s in got["kueue_pending_workloads"][2]
                       if s.labels["cluster_queue"] == cq}
            return got if pending == {"active": 0.0, "inadmissible": 1.0} else None  # the victim waits again

        got = eventually(families, what="the ClusterQueue's gauges after the preemption")
    finally:
        probes.stop()

    assert set(UPSTREAM_METRICS) - set(got) == set(), "every upstream name is exposed"
    assert {name: got[name][0] for name in UPSTREAM_METRICS} == {name: kind for name, (kind, _) in UPSTREAM_METRICS.items()}
    # Every series carries exactly the upstream labels; some have no series yet in this scenario.
    assert {name: got[name][1] for name in UPSTREAM_METRICS} == {
        name: set() if name in SOMETIMES and not got[name][1] else {frozenset(labels)}
        for name, (_, labels) in UPSTREAM_METRICS.items()}

    def value(name: str, family: str = "", **labels: str) -> float:
        (sample,) = [s for s in got[family or name][2] if s.name == name and labels.items() <= s.labels.items()]
        return sample.value

    assert value("kueue_admitted_workloads_total", cluster_queue=cq) == 2
    assert value("kueue_quota_reserved_workloads_total", cluster_queue=cq) == 2
    assert value("kueue_admission_wait_time_seconds_count", "kueue_admission_wait_time_seconds", cluster_queue=cq) == 2
    assert value("kueue_evicted_workloads_total", cluster_queue=cq, reason="Preempted") == 1
    assert value("kueue_preempted_workloads_total", preempting_cluster_queue=cq, reason="InClusterQueue") == 1
    assert (value("kueue_reserving_active_workloads", cluster_queue=cq),
            value("kueue_admitted_active_workloads", cluster_queue=cq)) == (1, 1)
    assert [value("kueue_cluster_queue_status", cluster_queue=cq, status=s) for s in ("pending", "active", "terminating")] == [0, 1, 0]
    quota = {"cohort": "", "cluster_queue": cq, "flavor": "default", "resource": "cpu"}
    assert [value(name, **quota) for name in ("kueue_cluster_queue_nominal_quota", "kueue_cluster_queue_resource_reservation",
                                              "kueue_cluster_queue_resource_usage", "kueue_cluster_queue_borrowing_limit",
                                              "kueue_cluster_queue_lending_limit")] == [4, 4, 4, 0, 0]
    assert value("kueue_admission_attempts_total", result="success") >= 2
    buckets = [s.labels["le"] for s in got["kueue_admission_wait_time_seconds"][2]
               if s.name.endswith("_bucket") and s.labels["cluster_queue"] == cq]
    assert tuple(buckets) == KUEUE_WAIT_BUCKETS
