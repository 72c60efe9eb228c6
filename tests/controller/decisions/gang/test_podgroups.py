"""PodGroups: the one each top-level workload needs, and their status as scheduler-plugins writes it."""

from __future__ import annotations

import copy
import datetime as _dt
from dataclasses import replace
from typing import Any

import pytest

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.api.errors import FieldError
from batchgate.clock import format_time
from batchgate.kinds import QUEUED
from controller.decisions.gang import podgroups as pg
from tests.upstream_corpus import corpus_param
from tests.controller.decisions.gang_builders import a_pod

T0 = _dt.datetime(2026, 1, 1, 12, tzinfo=_dt.timezone.utc)
TIMEOUT = _dt.timedelta(seconds=300)


def labelled(template: dict[str, Any], group: str) -> dict[str, Any]:
    template.setdefault("metadata", {}).setdefault("labels", {})[keys.POD_GROUP_LABEL] = group
    return template


def a_job(name: str = "train", *, parallelism: int = 4, completions: int | None = None, group: str | None = None,
          owner: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team-a", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": "aw",
                                    "uid": "uid-aw", "controller": True}]
    spec: dict[str, Any] = {"parallelism": parallelism, "template": labelled(
        {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}, group or name)}
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def a_pytorchjob(name: str = "pt", workers: int = 3) -> dict[str, Any]:
    template = labelled({"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}, name)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": copy.deepcopy(template)},
                                             "Worker": {"replicas": workers, "template": copy.deepcopy(template)}}}}


def an_appwrapper(name: str, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}"},
            "spec": {"components": [{"template": {k: v for k, v in job.items() if k != "metadata"}
                                     | {"metadata": {"name": job["metadata"]["name"]}}} for job in jobs]}}


def min_member(job: dict[str, Any]) -> int | None:
    desired = pg.desired_podgroup(job, QUEUED[job["kind"]], TIMEOUT)
    return None if desired is None else desired["spec"]["minMember"]


@pytest.mark.parametrize(("job", "expected"), [
    pytest.param(a_job(parallelism=4), 4, id="a Job's parallelism is its gang size"),
    pytest.param(a_job(parallelism=4, completions=2), 2, id="a Job never runs more pods than its completions"),
    pytest.param(a_pytorchjob(workers=3), 4, id="a PyTorchJob's master and workers form one gang"),
    pytest.param(an_appwrapper("aw", [a_job("a", group="aw", parallelism=2), a_job("b", group="aw", parallelism=3)]),
                 5, id="an AppWrapper's gang sums the replicas of its podSets"),
    pytest.param(a_job(group="someone-else"), None, id="a workload whose pods name another group gets none"),
    pytest.param(a_job(owner=True), None, id="a Job an AppWrapper owns gets none (the AppWrapper's gang covers it)"),
    corpus_param("mlbatch/job-with-podgroup.yaml", None,
                 id="MLBatch's AppWrapper wrapping its own PodGroup gets none from us"),
])
def test_which_workloads_get_a_podgroup_and_how_big(job: dict[str, Any], expected: int | None) -> None:
    assert min_member(job) == expected


def test_the_podgroup_is_named_like_the_label_owned_by_the_workload_and_times_out_by_policy() -> None:
    desired = pg.desired_podgroup(a_job("train"), QUEUED["Job"], _dt.timedelta(minutes=2))
    assert desired == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "team-a", "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "uid-train",
            "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"minMember": 4, "scheduleTimeoutSeconds": 120}}
    assert pg.owned_by(desired, a_job("train"))
    assert not pg.owned_by({"metadata": {"name": "train"}}, a_job("train"))
    assert pg.spec_patch(desired, desired) is None
    assert pg.spec_patch({"spec": {"minMember": 2, "scheduleTimeoutSeconds": 120}}, desired) == {"spec": {"minMember": 4}}


def a_group(phase: str = "", *, min_member: int = 2, started: _dt.datetime | None = None,
            timeout: int | None = None, **status: Any) -> pg.PodGroupInfo:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    raw_status = {**status, **({"phase": phase} if phase else {})}
    if started is not None:
        raw_status["scheduleStartTime"] = format_time(started)
    return pg.parse_podgroup({"metadata": {"name": "g", "namespace": "team-a", "creationTimestamp": format_time(T0)},
                              "spec": spec, "status": raw_status})


def members(*phases: str, bound: bool = True, deleting: bool = False) -> list[Any]:
    pods = [a_pod(f"g-{i}", group="g", phase=p, node="n1" if bound or p != "Pending" else "", owner="train")
            for i, p in enumerate(phases)]
    return [replace(p, deleting=True) for p in pods] if deleting else pods


# kubernetes-sigs/scheduler-plugins pkg/controllers/podgroup_controller.go Reconcile (the phase
# switch and getCurrentPodStats) and podgroup_controller_test.go TestPodGroupController ("Group
# running", "Group failed", "Group finished", "Group status convert from pending to prescheduling",
# "Group min member more than Pod number", "Group status convert from running to pending").
@pytest.mark.parametrize(("group", "pods", "patch"), [
    pytest.param(a_group(), [], {"phase": "Pending", "running": 0, "succeeded": 0, "failed": 0},
                 id="a new PodGroup is Pending, its counts at 0"),
    pytest.param(a_group("Pending", running=0, succeeded=0, failed=0), members("Pending"), None,
                 id="a Pending group short of pods stays Pending"),
    pytest.param(a_group("Pending", running=0, succeeded=0, failed=0), members("Pending", "Pending", bound=False),
                 {"phase": "Scheduling", "scheduleStartTime": format_time(T0), "occupiedBy": "team-a/train"},
                 id="a Pending group with minMember pods starts Scheduling, occupied by their owner"),
    pytest.param(a_group("Scheduling", started=T0), members("Running", "Pending"),
                 {"running": 1, "succeeded": 0, "failed": 0}, id="one of two running keeps it Scheduling"),
    pytest.param(a_group("Scheduling", started=T0), members("Running", "Running"),
                 {"phase": "Running", "running": 2, "succeeded": 0, "failed": 0}, id="minMember running makes it Running"),
    pytest.param(a_group("Running", running=2, succeeded=0, failed=0), members("Succeeded", "Succeeded"),
                 {"phase": "Finished", "running": 0, "succeeded": 2}, id="minMember succeeded makes it Finished"),
    pytest.param(a_group("Running", running=2, succeeded=0, failed=0), members("Running", "Failed"),
                 {"phase": "Failed", "running": 1, "failed": 1}, id="a failed pod once all are out makes it Failed"),
    pytest.param(a_group("Running", running=2, succeeded=0, failed=0), members("Running"),
                 {"phase": "Pending", "running": 1}, id="losing pods below minMember makes it Pending again"),
    pytest.param(a_group("Finished"), members("Running", "Running"), None, id="Finished is terminal"),
    pytest.param(a_group("Failed"), [], None, id="Failed is terminal"),
    # Beyond scheduler-plugins (issue 16 item 8): counts are recomputed in Pending too, and pods
    # being deleted are not counted, so a preempted gang does not end Failed with a running pod.
    pytest.param(a_group("Pending", running=1, succeeded=0, failed=0), [], {"running": 0},
                 id="a Pending group whose last pod is gone no longer counts it running"),
    pytest.param(a_group("Pending", running=2, succeeded=0, failed=1), members("Running"), {"running": 1, "failed": 0},
                 id="a Pending group short of pods shows the pods it has"),
    pytest.param(a_group("Running", running=2, succeeded=0, failed=0), [*members("Failed", "Running", deleting=True)],
                 {"phase": "Pending", "running": 0},
                 id="a gang torn down by a preemption goes back to Pending rather than Failed"),
    pytest.param(a_group("Running", running=2, succeeded=0, failed=0), [replace(members("Running")[0], deleting=True), *members("Running", "Running")[1:]],
                 {"phase": "Pending", "running": 1},
                 id="a pod being deleted is no longer a member"),
    pytest.param(a_group("Pending", running=0, succeeded=0, failed=0), members("Pending", "Pending", deleting=True), None,
                 id="pods being deleted do not start a Pending group Scheduling"),
])
def test_podgroup_status_follows_the_scheduler_plugins_controller(group: pg.PodGroupInfo, pods: list[Any],
                                                                  patch: dict[str, Any] | None) -> None:
    assert pg.decide_status(group, pods, T0, TIMEOUT).patch == patch


@pytest.mark.parametrize(("group", "pods", "restartable", "patch"), [
    pytest.param(a_group("Failed", running=1, failed=1, occupiedBy="team-a/aw", started=T0), [], True,
                 {"phase": "Pending", "running": 0, "succeeded": 0, "failed": 0, "occupiedBy": None,
                  "scheduleStartTime": None},
                 id="a failed gang whose AppWrapper took every pod down to deploy again starts over Pending"),
    pytest.param(a_group("Failed", running=1, failed=1), members("Running", "Failed"), True, None,
                 id="while the failed pods are still there the PodGroup stays Failed"),
    pytest.param(a_group("Finished", succeeded=2), [], False, None,
                 id="a finished gang whose owner is done stays Finished after its pods are gone"),
])
def test_a_terminal_podgroup_starts_over_only_when_its_appwrapper_redeploys(
        group: pg.PodGroupInfo, pods: list[Any], restartable: bool, patch: dict[str, Any] | None) -> None:
    assert pg.decide_status(group, pods, T0, TIMEOUT, restartable=restartable).patch == patch


@pytest.mark.parametrize(("owner_phase", "owned", "expected"), [
    pytest.param("Resetting", True, True, id="an AppWrapper resetting redeploys its gang"),
    pytest.param("Suspended", True, True, id="an AppWrapper suspended by Kueue will deploy again"),
    pytest.param("Failed", True, False, id="a failed AppWrapper is done"),
    pytest.param("Succeeded", True, False, id="a succeeded AppWrapper is done"),
    pytest.param("Resetting", False, False, id="a PodGroup the user wrote is never touched"),
])
def test_which_owners_redeploy_their_gang(owner_phase: str, owned: bool, expected: bool) -> None:
    aw = an_appwrapper("aw", [a_job("aw-job")])
    aw["status"] = {"phase": owner_phase}
    group = {"metadata": {"name": "aw", "namespace": "team-a",
                          "ownerReferences": [{"kind": "AppWrapper", "name": "aw", "controller": True,
                                               "uid": "uid-aw" if owned else "uid-someone"}]}}
    assert pg.redeploys(group, aw) is expected
    assert pg.redeploys(group, None) is False


@pytest.mark.parametrize(("group", "pods", "now", "warning", "requeue"), [
    pytest.param(a_group("Scheduling", started=T0, timeout=60), members("Pending", "Pending", bound=False),
                 T0 + _dt.timedelta(seconds=20), None, 40, id="before its timeout a waiting gang is looked at again later"),
    pytest.param(a_group("Scheduling", started=T0, timeout=60), members("Pending", "Pending", bound=False),
                 T0 + _dt.timedelta(seconds=60), "team-a/g: 0 of 2 pods placed after 60s", 60,
                 id="at its timeout a waiting gang is reported and its timer starts again"),
    pytest.param(a_group("Scheduling", started=T0), members("Pending", "Pending", bound=False),
                 T0 + _dt.timedelta(seconds=300), "0 of 2 pods placed after 300s", 300,
                 id="a PodGroup without its own timeout uses the policy's gangTimeout"),
    pytest.param(a_group("Scheduling", started=T0, timeout=60), members("Pending", "Pending"),
                 T0 + _dt.timedelta(hours=1), None, None, id="a gang whose pods are all bound is not late"),
    pytest.param(a_group("Pending", timeout=60), members("Pending", "Pending", bound=False),
                 T0, None, 60, id="a gang that starts scheduling now is looked at again at its timeout"),
])
def test_the_schedule_timeout(group: pg.PodGroupInfo, pods: list[Any], now: _dt.datetime, warning: str | None,
                              requeue: int | None) -> None:
    decision = pg.decide_status(group, pods, now, TIMEOUT)
    if warning is None:
        assert decision.warning is None
    else:
        assert decision.warning is not None and decision.warning[0] == "Timeout" and warning in decision.warning[1]
        assert decision.patch and decision.patch["scheduleStartTime"] == format_time(now)
    assert decision.requeue_after == (None if requeue is None else _dt.timedelta(seconds=requeue))


@pytest.mark.parametrize(("raw", "path"), [
    pytest.param({"metadata": {"name": "g"}, "spec": {"minMember": 0}}, "spec.minMember", id="minMember below 1"),
    pytest.param({"metadata": {"name": "g"}, "spec": {"minMember": 2, "scheduleTimeoutSeconds": "soon"}},
                 "spec.scheduleTimeoutSeconds", id="a timeout that is no integer"),
    pytest.param({"metadata": {"name": "g"}, "status": {"scheduleStartTime": "yesterday"}},
                 "status.scheduleStartTime", id="a start time that is no timestamp"),
])
def test_a_malformed_podgroup_is_a_field_error(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(FieldError) as caught:
        pg.parse_podgroup(raw)
    assert str(caught.value).startswith(path)
