"""Gang placement on a local cluster that runs pods, with the real controller and the real client.

We test these aspects: a Job whose pods name batchgate-scheduler gets its PodGroup and is bound
all at once, packed onto the fullest GPU nodes, and its PodGroup goes Scheduling -> Running ->
Finished; a gang that does not fit stays entirely Pending (FailedScheduling, PodGroup
Scheduling) and is placed once capacity frees, never partially; a PodGroup the user wrote is
kept as written and its schedule timeout is reported; the local cluster's default scheduler
leaves pods naming another scheduler alone; a bind refused because the pod was bound meanwhile
is read again, not retried.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Iterator

import pytest

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.clock import SystemClock
from batchgate.policy import parse_policy
from controller.adapters.events import EventRecorder
from controller.adapters.gang import GangScheduler
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.manager import Controller
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from tests.controller.cluster import controller_client, eventually, get_or_none, running_cluster, started_controller

pytestmark = pytest.mark.timeout(120)
PODS, JOBS, PODGROUPS, EVENTS = RESOURCES["Pod"], RESOURCES["Job"], RESOURCES["PodGroup"], RESOURCES["Event"]
BEHAVIOR = "localcluster.batchgate.dev/behavior"
SCHEDULER = "batchgate-scheduler"
GANG_NODES = "- name: gpu\n  count: 3\n  capacity: {cpu: '32', memory: 128Gi, nvidia.com/gpu: '8'}\n"


@pytest.fixture(scope="module")
def gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Three 8-GPU nodes (gpu-0, gpu-1, gpu-2), kubelets and the Job controller; CRDs applied."""
    yield from running_cluster(tmp_path_factory.mktemp("gang-cluster"), GANG_NODES)


@pytest.fixture(scope="module")
def client(gang_cluster: Any) -> Iterator[KubeClient]:
    c = KubeClient.from_kubeconfig(str(gang_cluster.kubeconfig))
    yield c
    c.close()


@pytest.fixture(scope="module")
def controller(gang_cluster: Any) -> Iterator[Controller]:
    yield from started_controller(gang_cluster, watch_timeout=5)


@pytest.fixture
def ns(client: KubeClient, controller: Controller) -> str:
    name = f"gang-{uuid.uuid4().hex[:6]}"
    client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def idle(client: KubeClient, ns: str) -> str:
    """No pod of an earlier test holds a node any more (tests may run in any order)."""
    def quiet() -> bool:
        items = client.list(PODS).get("items") or []
        return all(p["status"].get("phase") in ("Succeeded", "Failed") for p in items if p["spec"].get("nodeName"))

    eventually(quiet, timeout=30, what="earlier tests' pods to finish")
    return ns


def a_job(ns: str, name: str, *, pods: int, gpus: int, run_for: str = "2s", group: str | None = None,
          scheduler: str = SCHEDULER) -> dict[str, Any]:
    """A Job as the gateway leaves it: the policy's scheduler and the pod-group label on its template."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns}, "spec": {
        "parallelism": pods, "completions": pods, "backoffLimit": 0, "template": {
            "metadata": {"labels": {keys.POD_GROUP_LABEL: group or name},
                         "annotations": {BEHAVIOR: json.dumps({"startAfter": "0s", "runFor": run_for})}},
            "spec": {"schedulerName": scheduler, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "resources": {
                         "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                         "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}}


def pods_of(client: KubeClient, ns: str, job: str) -> list[dict[str, Any]]:
    return client.list(PODS, ns, labelSelector=f"{keys.JOB_NAME_LABEL}={job}").get("items") or []


def bound(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["spec"]["nodeName"] for p in pods if (p.get("spec") or {}).get("nodeName"))


def podgroup(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    return get_or_none(client, PODGROUPS, name, ns)


def phase(client: KubeClient, ns: str, name: str) -> str:
    return ((podgroup(client, ns, name) or {}).get("status") or {}).get("phase") or ""


def events(client: KubeClient, ns: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENTS, ns).get("items") or [] if e.get("reason") == reason]


def phases_until_finished(client: KubeClient, ns: str, name: str, since: str) -> list[str]:
    """Every phase the PodGroup's status went through, read from a watch that starts before it exists."""
    seen: list[str] = []
    stream = client.watch(PODGROUPS, ns, since, timeout_seconds=30)
    try:
        for event in stream:
            obj = event.get("object") or {}
            if (obj.get("metadata") or {}).get("name") != name:
                continue
            current = (obj.get("status") or {}).get("phase") or ""
            if current and (not seen or seen[-1] != current):
                seen.append(current)
            if current in ("Finished", "Failed"):
                break
    finally:
        stream.close()
    return seen


def test_a_job_naming_batchgate_scheduler_gets_its_podgroup_and_is_bound_all_at_once_packed(
        client: KubeClient, idle: str, controller: Controller) -> None:
    ns = idle
    since = client.list(PODGROUPS, ns)["metadata"]["resourceVersion"]
    client.create(JOBS, a_job(ns, "train", pods=3, gpus=4, run_for="2s"))
    assert phases_until_finished(client, ns, "train", since) == ["Pending", "Scheduling", "Running", "Finished"]
    group = podgroup(client, ns, "train")
    # Made for the whole gang; afterwards it follows the pods still to run (issue 20), so pods that
    # finish before their siblings may shrink it: its final minMember is not the gang that ran.
    assert [e["message"] for e in events(client, ns, "CreatedPodGroup")] == ["Created PodGroup train with minMember 3"]
    assert group is not None and group["spec"]["scheduleTimeoutSeconds"] == 300
    assert 1 <= group["spec"]["minMember"] <= 3
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "train", True)
    assert (group["status"]["succeeded"], group["status"]["running"], group["status"]["failed"]) == (3, 0, 0)
    assert group["status"]["occupiedBy"] == f"{ns}/train"
    # Four GPUs each on 8-GPU nodes: packing fills gpu-0 before using gpu-1, gpu-2 stays empty.
    assert bound(pods_of(client, ns, "train")) == ["gpu-0", "gpu-0", "gpu-1"]
    scheduled = events(client, ns, "Scheduled")
    assert sorted(e["message"] for e in scheduled)[0].startswith(f"Successfully assigned {ns}/train-")
    assert len(scheduled) == 3
    assert "batchgate_gang_placement_duration_seconds_count" in controller.metrics.exposition().decode()


def test_a_gang_that_does_not_fit_stays_entirely_pending_and_is_placed_once_capacity_frees(
        client: KubeClient, idle: str) -> None:
    ns = idle
    client.create(JOBS, a_job(ns, "big", pods=3, gpus=6, run_for="4s"))
    eventually(lambda: len(bound(pods_of(client, ns, "big"))) == 3, timeout=20, what="the first gang bound")
    # Each node has 2 GPUs left: a gang of two 4-GPU pods fits nowhere until `big` finishes.
    client.create(JOBS, a_job(ns, "wait", pods=2, gpus=4, run_for="1s"))
    eventually(lambda: phase(client, ns, "wait") == "Scheduling", timeout=20, what="wait Scheduling")
    # Only the waiting gang's, and not the 'PodGroup ... not found' either gang may get for the
    # moment its pods exist before its PodGroup does (which step comes first is the scheduler's race).
    failed = eventually(lambda: [e for e in events(client, ns, "FailedScheduling")
                                 if e["involvedObject"]["name"].startswith("wait-")
                                 and not e["message"].startswith("PodGroup ")], timeout=20,
                        what="FailedScheduling for the waiting gang")
    assert failed[0]["message"].startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."), failed
    counts, times = [], []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        counts.append(len(bound(pods_of(client, ns, "wait"))))
        times.append(time.monotonic())
        if counts[-1] == 2:
            break
        time.sleep(0.05)
    assert counts[-1] == 2, "the waiting gang was never placed"
    assert counts[0] == 0
    # The placement is decided for the whole gang at once, but each pod is bound by its own API
    # request: a reader between the two may see one. What must not happen is a pod bound alone
    # and the gang left so, or a bound pod let go.
    assert counts == sorted(counts), f"a bound pod came unbound: {counts}"
    first = next(i for i, count in enumerate(counts) if count)
    assert times[-1] - times[first] < 2.0, f"the gang stayed partially bound for {times[-1] - times[first]:.2f}s: {counts}"


def test_a_podgroup_the_user_wrote_is_kept_and_its_schedule_timeout_is_reported(client: KubeClient, ns: str) -> None:
    client.create(PODGROUPS, {"apiVersion": keys.PODGROUP_API_VERSION, "kind": "PodGroup",
                              "metadata": {"name": "mine", "namespace": ns},
                              "spec": {"minMember": 2, "scheduleTimeoutSeconds": 1}})
    client.create(JOBS, a_job(ns, "mine", pods=2, gpus=16, group="mine"))
    # Generous: on a loaded machine the Job controller and the gang loop may take a while to start.
    warning = eventually(lambda: events(client, ns, "Timeout"), timeout=60, what=lambda: (
        f"the Timeout warning; PodGroup {podgroup(client, ns, 'mine')}; pods "
        f"{[(p['metadata']['name'], p['status'].get('phase'), p['spec'].get('nodeName')) for p in pods_of(client, ns, 'mine')]}"))
    assert warning[0]["involvedObject"]["kind"] == "PodGroup"
    assert "0 of 2 pods placed after 1s" in warning[0]["message"]
    group = podgroup(client, ns, "mine")
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 1}  # type: ignore[index]
    assert not group["metadata"].get("ownerReferences")  # type: ignore[index]
    assert bound(pods_of(client, ns, "mine")) == []


def test_pods_naming_another_scheduler_are_left_alone_by_both_schedulers(client: KubeClient, ns: str) -> None:
    client.create(JOBS, a_job(ns, "other", pods=1, gpus=1, scheduler="someone-else"))
    eventually(lambda: pods_of(client, ns, "other"), what="the Job's pod")
    time.sleep(2)
    assert bound(pods_of(client, ns, "other")) == []


def test_a_bind_refused_because_the_pod_was_bound_meanwhile_is_read_again_not_retried(
        gang_cluster: Any, client: KubeClient, ns: str) -> None:
    """The binder's own step, run by hand with a cache that missed a bind another scheduler made."""
    policy = parse_policy("scheduling:\n  schedulerName: by-hand-scheduler\n")
    pod = client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "raced", "namespace": ns},
                               "spec": {"schedulerName": "by-hand-scheduler", "containers": [
                                   {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})
    store = SharedStore()
    store.replace("Node", client.list(RESOURCES["Node"])["items"])
    store.apply("Pod", "ADDED", pod)  # the cache still sees it unbound...
    client.request("POST", PODS.path(ns, "raced", "binding"), body={  # ...while someone binds it to gpu-2
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "raced"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-2"}})
    as_controller = controller_client(gang_cluster)
    writer = Writer(as_controller, lambda: True)
    scheduler = GangScheduler(store, writer, EventRecorder(writer, SystemClock(), "test"), SystemClock(), as_controller,
                              lambda: policy, lambda: True)
    try:
        scheduler.step()
        assert client.get(PODS, "raced", ns)["spec"]["nodeName"] == "gpu-2"
    finally:
        scheduler.stop()
        as_controller.close()
        # It runs until deleted: left bound, it would hold gpu-2 against every `idle` test after it.
        client.delete(PODS, "raced", ns, grace_period_seconds=0)
    assert store.get("Pod", ns, "raced")["spec"]["nodeName"] == "gpu-2"  # type: ignore[index]
    assert not [e for e in events(client, ns, "Scheduled") if e["involvedObject"]["name"] == "raced"]
    text = scheduler.metrics.exposition().decode()
    assert 'batchgate_pod_bindings_total{outcome="refused"} 1.0' in text
    assert 'batchgate_pod_bindings_total{outcome="bound"}' not in text


@pytest.mark.parametrize("aw_phase, expected", [
    pytest.param(keys.PHASE_RESETTING, "Pending",
                 id="the Failed PodGroup of an AppWrapper resetting with no pods left starts over Pending"),
    pytest.param(keys.PHASE_FAILED, "Failed", id="the Failed PodGroup of a failed AppWrapper stays Failed"),
])
def test_a_terminal_podgroup_starts_over_when_its_appwrapper_deploys_again(
        client: KubeClient, ns: str, aw_phase: str, expected: str) -> None:
    """Upstream's AppWrapper deletes and remakes its PodGroup on a reset; ours is kept, so it must start over."""
    aw_res = RESOURCES["AppWrapper"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "reset-job"}, "spec": {"template": {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}
    aw = client.create(aw_res, {  # managed elsewhere, so only its phase, set below, speaks for it
        "apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "metadata": {"name": "reset", "namespace": ns},
        "spec": {"managedBy": "example.com/elsewhere", "suspend": True, "components": [{"template": job}]}})
    client.patch(aw_res, "reset", ns, {"status": {"phase": aw_phase}}, subresource="status")
    client.create(PODGROUPS, {
        "apiVersion": keys.PODGROUP_API_VERSION, "kind": "PodGroup", "metadata": {
            "name": "reset", "namespace": ns, "ownerReferences": [{
                "apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": "reset",
                "uid": aw["metadata"]["uid"], "controller": True}]},
        "spec": {"minMember": 2}})
    eventually(lambda: phase(client, ns, "reset") == "Pending", what="the new PodGroup Pending")
    failed = client.patch(PODGROUPS, "reset", ns, {"status": {"phase": "Failed", "running": 1, "failed": 1}},
                          subresource="status")
    assert failed["status"]["phase"] == "Failed"
    if expected == "Failed":
        time.sleep(2)  # several gang steps
    eventually(lambda: phase(client, ns, "reset") == expected, timeout=10,
               what=lambda: f"PodGroup {expected}, got {phase(client, ns, 'reset')!r}")
    assert (podgroup(client, ns, "reset") or {}).get("status", {}).get("failed", 0) == (1 if expected == "Failed" else 0)
