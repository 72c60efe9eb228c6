"""AppWrappers on a local cluster that runs pods, with the real controller and the real client.

We test the adapter's plumbing end to end: a queued AppWrapper admitted by quota goes Suspended ->
Resuming -> Running (its Job created with an owner reference and the AppWrapper label on its pod
template) -> Succeeded, and its Workload finishes; a Kueue eviction suspends it, deletes its
components and releases the quota; deleting a running AppWrapper removes its children and then
the finalizer. The fault scenarios live in the acceptance tests.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.clock import SystemClock
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.manager import Controller
from tests.controller.cluster import controller_client, eventually, get_or_none, make_team, started_controller

pytestmark = pytest.mark.timeout(90)
AW, JOBS, PODS, WL = RESOURCES["AppWrapper"], RESOURCES["Job"], RESOURCES["Pod"], RESOURCES["Workload"]
CQ = RESOURCES["ClusterQueue"]
BEHAVIOR = "localcluster.batchgate.dev/behavior"


@pytest.fixture(scope="module")
def controller(live_cluster: Any) -> Iterator[Controller]:
    yield from started_controller(live_cluster, watch_timeout=5)


@pytest.fixture
def team(live_client: KubeClient, controller: Controller) -> dict[str, str]:
    """A namespace whose LocalQueue `default-queue` feeds its own ClusterQueue of 4 cpu."""
    return make_team(live_client)


def an_appwrapper(ns: str, name: str, *, pods: int = 2, run_for: str | None = "1s") -> dict[str, Any]:
    """A queued, suspended AppWrapper wrapping one Job of `pods` pods of 1 cpu (as the gateway leaves it)."""
    behavior = {"startAfter": "0s", **({"runFor": run_for} if run_for else {})}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-job"}, "spec": {
        "parallelism": pods, "completions": pods, "template": {
            "metadata": {"annotations": {BEHAVIOR: json.dumps(behavior)}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": ns, "labels": {keys.QUEUE_NAME_LABEL: "default-queue"}},
            "spec": {"suspend": True, "components": [{"template": job}]}}


def status_of(obj: dict[str, Any] | None, type_: str) -> str | None:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c["status"] for c in conds if c["type"] == type_), None)


def phase(client: KubeClient, ns: str, name: str) -> str:
    return ((get_or_none(client, AW, name, ns) or {}).get("status") or {}).get("phase", "")


def labelled_pods(client: KubeClient, ns: str, name: str) -> list[dict[str, Any]]:
    return client.list(PODS, ns, labelSelector=f"{keys.APPWRAPPER_LABEL}={name}")["items"]


def workload(client: KubeClient, ns: str, aw: dict[str, Any]) -> dict[str, Any] | None:
    items = client.list(WL, ns)["items"]
    return next((w for w in items if w["metadata"]["ownerReferences"][0]["uid"] == aw["metadata"]["uid"]), None)


def events(client: KubeClient, ns: str, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in client.list(RESOURCES["Event"], ns)["items"]
            if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "AppWrapper"]


def test_an_admitted_appwrapper_deploys_runs_and_succeeds(live_client: KubeClient, controller: Controller,
                                                          team: dict[str, str]) -> None:
    ns = team["ns"]
    aw = live_client.create(AW, an_appwrapper(ns, "train"))
    eventually(lambda: phase(live_client, ns, "train") == keys.PHASE_RUNNING, timeout=30,
               what=lambda: f"Running, got {phase(live_client, ns, 'train')!r}")
    running = live_client.get(AW, "train", ns)
    assert keys.APPWRAPPER_FINALIZER in running["metadata"]["finalizers"]
    assert running["spec"]["suspend"] is False, "admitted by quota and un-suspended by the job integration"
    assert status_of(running, keys.COND_QUOTA_RESERVED) == "True"
    assert status_of(running, keys.COND_RESOURCES_DEPLOYED) == "True"
    component = running["status"]["componentStatus"][0]
    assert (component["name"], component["kind"], component["podSets"][0]["replicas"]) == ("train-job", "Job", 2)

    job = live_client.get(JOBS, "train-job", ns)
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("AppWrapper", "train", aw["metadata"]["uid"], True)
    assert job["metadata"]["labels"][keys.APPWRAPPER_LABEL] == "train"
    assert job["spec"]["template"]["metadata"]["labels"][keys.APPWRAPPER_LABEL] == "train"

    eventually(lambda: phase(live_client, ns, "train") == keys.PHASE_SUCCEEDED, timeout=30,
               what=lambda: f"Succeeded, got {phase(live_client, ns, 'train')!r}")
    done = live_client.get(AW, "train", ns)
    assert status_of(done, keys.COND_QUOTA_RESERVED) == "False"
    assert status_of(done, keys.COND_RESOURCES_DEPLOYED) == "True", "kept for successTTL, as upstream"
    assert len(labelled_pods(live_client, ns, "train")) == 2
    eventually(lambda: status_of(workload(live_client, ns, aw), "Finished") == "True", what="the Workload to finish")
    text = controller.metrics.exposition().decode()
    assert f'appwrapper_phase_total{{namespace="{ns}",phase="Succeeded"}} 1.0' in text


def versions_until_succeeded(client: KubeClient, ns: str, name: str, since: str) -> list[dict[str, Any]]:
    """Every version of the AppWrapper written after `since`, from a watch, up to its Succeeded one."""
    seen: list[dict[str, Any]] = []
    stream = client.watch(AW, ns, since, timeout_seconds=30, field_selector=f"metadata.name={name}")
    try:
        for event in stream:
            if event.get("type") != "MODIFIED":
                continue
            seen.append(event["object"])
            if (event["object"].get("status") or {}).get("phase") == keys.PHASE_SUCCEEDED:
                break
    finally:
        stream.close()
    return seen


def deployed_marks(obj: dict[str, Any]) -> list[str | None]:
    return [next((c["reason"] for c in component.get("conditions") or [] if c["type"] == keys.COND_RESOURCES_DEPLOYED),
                 None) for component in (obj.get("status") or {}).get("componentStatus") or []]


def test_an_admitted_appwrapper_is_deployed_with_the_fewest_writes(live_client: KubeClient, controller: Controller,
                                                                   team: dict[str, str]) -> None:
    """The un-suspend carries the finalizer (no patch of its own), and going Resuming marks the
    components in the same write; the phases users see are the same as before."""
    ns = team["ns"]
    aw = live_client.create(AW, an_appwrapper(ns, "lean"))
    versions = versions_until_succeeded(live_client, ns, "lean", aw["metadata"]["resourceVersion"])
    phases = [(v.get("status") or {}).get("phase") for v in versions]
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == [
        keys.PHASE_SUSPENDED, keys.PHASE_RESUMING, keys.PHASE_RUNNING, keys.PHASE_SUCCEEDED], phases
    changes = [(before["spec"]["suspend"] != after["spec"]["suspend"],
                before["metadata"].get("finalizers") != after["metadata"].get("finalizers"))
               for before, after in zip([aw, *versions], versions)]
    assert changes.count((True, True)) == 1 and (False, True) not in changes, "the finalizer came with the un-suspend"
    assert keys.APPWRAPPER_FINALIZER in versions[-1]["metadata"]["finalizers"]
    resuming = [v for v in versions if (v.get("status") or {}).get("phase") == keys.PHASE_RESUMING]
    assert len(resuming) == 1, "one write takes it to Resuming"
    assert deployed_marks(resuming[0]) == [keys.REASON_COMPONENT_CREATION_INITIATED], "marked before the create"


def test_a_kueue_eviction_suspends_the_appwrapper_and_releases_its_quota(
        live_client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    ns, cq = team["ns"], team["cq"]
    aw = live_client.create(AW, an_appwrapper(ns, "serve", run_for=None))
    eventually(lambda: len([p for p in labelled_pods(live_client, ns, "serve")
                            if p.get("status", {}).get("phase") == "Running"]) == 2, timeout=30,
               what="both pods running")
    live_client.patch(CQ, cq, None, {"spec": {"stopPolicy": "HoldAndDrain"}})

    eventually(lambda: phase(live_client, ns, "serve") == keys.PHASE_SUSPENDED, timeout=30,
               what=lambda: f"Suspended, got {phase(live_client, ns, 'serve')!r}")
    suspended = live_client.get(AW, "serve", ns)
    assert suspended["spec"]["suspend"] is True
    assert status_of(suspended, keys.COND_QUOTA_RESERVED) == "False"
    assert status_of(suspended, keys.COND_RESOURCES_DEPLOYED) == "False"
    assert get_or_none(live_client, JOBS, "serve-job", ns) is None
    eventually(lambda: not labelled_pods(live_client, ns, "serve"), what="the pods to be gone")
    eventually(lambda: status_of(workload(live_client, ns, aw), keys.COND_QUOTA_RESERVED) == "False",
               what="the Workload's quota to be released")
    assert (keys.EVENT_SUSPENDING, "Externally suspended while in the Running phase") in events(live_client, ns, "serve")


def test_deleting_a_running_appwrapper_removes_its_children_then_its_finalizer(
        live_client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    ns = team["ns"]
    live_client.create(AW, an_appwrapper(ns, "doomed", run_for=None))
    eventually(lambda: labelled_pods(live_client, ns, "doomed"), timeout=30, what="its pods")
    live_client.delete(AW, "doomed", ns)
    eventually(lambda: get_or_none(live_client, AW, "doomed", ns) is None, timeout=30,
               what=lambda: f"the AppWrapper to go, phase {phase(live_client, ns, 'doomed')!r}")
    assert get_or_none(live_client, JOBS, "doomed-job", ns) is None
    eventually(lambda: not labelled_pods(live_client, ns, "doomed"), what="its pods to be gone")


def unqueued(aw: dict[str, Any]) -> dict[str, Any]:
    """The same AppWrapper outside Kueue: no queue label, not suspended (it deploys at once)."""
    aw["metadata"]["labels"] = {}
    aw["spec"]["suspend"] = False
    return aw


@pytest.mark.parametrize("component, message", [
    pytest.param({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "lws"},
                  "spec": {}},
                 'no matches for kind "LeaderWorkerSet" in version "leaderworkerset.x-k8s.io/v1"',
                 id="a kind the cluster does not serve"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "taken"}, "data": {}},
                 "resource taken exists, but is not controlled by appwrapper",
                 id="a name taken by an object it does not own"),
])
def test_a_component_that_cannot_be_created_fails_the_appwrapper_at_once(
        live_client: KubeClient, controller: Controller, team: dict[str, str], component: dict[str, Any],
        message: str) -> None:
    ns = team["ns"]
    live_client.create(RESOURCES["ConfigMap"], {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "taken", "namespace": ns}})
    aw = unqueued(an_appwrapper(ns, "broken"))
    aw["spec"]["components"].append({"template": component})
    live_client.create(AW, aw)
    eventually(lambda: phase(live_client, ns, "broken") == keys.PHASE_FAILED, timeout=30,
               what=lambda: f"Failed, got {phase(live_client, ns, 'broken')!r}")
    failed = live_client.get(AW, "broken", ns)
    (unhealthy,) = [c for c in failed["status"]["conditions"] if c["type"] == keys.COND_UNHEALTHY]
    assert (unhealthy["status"], unhealthy["reason"]) == ("True", keys.REASON_CREATE_FAILED)
    assert message in unhealthy["message"]
    assert failed["status"].get("resettingCount", 0) == 0, "a fatal error is not retried"
    eventually(lambda: get_or_none(live_client, JOBS, "broken-job", ns) is None, timeout=20,
               what="the component created before the failure to be deleted")
    eventually(lambda: status_of(live_client.get(AW, "broken", ns), keys.COND_RESOURCES_DEPLOYED) == "False",
               what="ResourcesDeployed False once the failed AppWrapper's components are gone")


def a_pod_appwrapper(ns: str, name: str, *, grace: str) -> dict[str, Any]:
    """An unqueued AppWrapper wrapping one bare Pod that takes 300 s to stop politely."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-pod",
                                                          "annotations": {BEHAVIOR: json.dumps({"startAfter": "0s"})}},
           "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 300, "containers": [
               {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": ns, "annotations": {keys.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: grace}},
            "spec": {"components": [{"template": pod}]}}


@pytest.mark.parametrize("grace", [
    pytest.param("0s", id="past the forceful deletion grace period a pod its silent kubelet never stops is force-deleted"),
])
def test_pods_that_never_stop_are_force_deleted_after_the_grace_period(
        live_client: KubeClient, controller: Controller, team: dict[str, str], grace: str) -> None:
    ns = team["ns"]
    live_client.create(AW, a_pod_appwrapper(ns, "stubborn", grace=grace))
    pod = eventually(lambda: (p := get_or_none(live_client, PODS, "stubborn-pod", ns)) and p.get("status", {}).get("phase") == "Running" and p,
                     timeout=30, what="its pod running")
    node = pod["spec"]["nodeName"]
    try:  # its kubelet stops answering: a polite deletion would leave the pod Terminating for 300 s
        live_client.patch(RESOURCES["Node"], node, None, {"metadata": {"labels": {"localcluster.batchgate.dev/health": "unreachable"}}})
        live_client.delete(AW, "stubborn", ns)
        eventually(lambda: get_or_none(live_client, AW, "stubborn", ns) is None, timeout=15,
                   what=lambda: f"the AppWrapper to go; pod {(get_or_none(live_client, PODS, 'stubborn-pod', ns) or {}).get('metadata')}")
        assert get_or_none(live_client, PODS, "stubborn-pod", ns) is None
    finally:
        live_client.patch(RESOURCES["Node"], node, None, {"metadata": {"labels": {"localcluster.batchgate.dev/health": None}}})


def test_nothing_is_decided_before_the_caches_are_filled(live_cluster: Any) -> None:
    """A restarted controller must not judge a running AppWrapper by a cache still listing its pods."""
    from batchgate.policy import DEFAULT_POLICY
    from controller.adapters.appwrappers import AppWrapperReconciler
    from controller.adapters.events import EventRecorder
    from controller.adapters.metrics import ControllerMetrics
    from controller.adapters.store import SharedStore
    from controller.adapters.writer import Writer
    from controller.state.cache import ObjectKey

    clock = SystemClock()
    store = SharedStore()
    running = an_appwrapper("team-x", "early")
    running["metadata"]["uid"] = "uid-early"
    running["status"] = {"phase": keys.PHASE_RUNNING, "componentStatus": [
        {"name": "early-job", "kind": "Job", "apiVersion": "batch/v1", "podSets": [{"replicas": 2}]}]}
    store.apply("AppWrapper", "ADDED", running)
    as_controller = controller_client(live_cluster)
    refusing = Writer(as_controller, lambda: False)  # any write would raise NotLeader
    reconciler = AppWrapperReconciler(store, refusing, EventRecorder(refusing, clock, "test"), clock, as_controller,
                                      lambda: DEFAULT_POLICY, ControllerMetrics(), synced=lambda: False)
    result = reconciler.reconcile(ObjectKey("AppWrapper", "team-x", "early"))
    as_controller.close()
    assert result.requeue_after is not None and 0 < result.requeue_after < 1, "nothing decided now, looked at again shortly"


def test_a_component_missing_only_from_a_stale_cache_does_not_fail_the_appwrapper(
        live_cluster: Any, live_client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    """Goal R5: a restarted controller whose Job cache lags the API must read the API before failing."""
    from controller.adapters.appwrappers import AppWrapperReconciler
    from controller.adapters.events import EventRecorder
    from controller.adapters.metrics import ControllerMetrics
    from controller.adapters.store import SharedStore
    from controller.adapters.writer import Writer
    from controller.state.cache import ObjectKey

    ns = team["ns"]
    live_client.create(AW, an_appwrapper(ns, "steady", run_for=None))
    eventually(lambda: phase(live_client, ns, "steady") == keys.PHASE_RUNNING, timeout=30,
               what=lambda: f"Running, got {phase(live_client, ns, 'steady')!r}")
    clock = SystemClock()
    stale = SharedStore()  # holds the AppWrapper but has not yet seen its Job
    stale.apply("AppWrapper", "ADDED", live_client.get(AW, "steady", ns))
    as_controller = controller_client(live_cluster)
    writer = Writer(as_controller, lambda: True)
    reconciler = AppWrapperReconciler(stale, writer, EventRecorder(writer, clock, "stale"), clock, as_controller,
                                      lambda: controller.policy, ControllerMetrics())
    reconciler.reconcile(ObjectKey("AppWrapper", ns, "steady"))
    as_controller.close()
    after = live_client.get(AW, "steady", ns)
    assert phase(live_client, ns, "steady") == keys.PHASE_RUNNING, after["status"].get("conditions")
    assert get_or_none(live_client, JOBS, "steady-job", ns) is not None


def test_a_component_a_previous_leader_created_before_its_status_write_is_adopted_not_duplicated(
        live_client: KubeClient, controller: Controller, team: dict[str, str]) -> None:
    """A leader that created the Job and died before recording it: the next one adopts that Job."""
    ns = team["ns"]
    aw = unqueued(an_appwrapper(ns, "again", run_for=None))
    aw["spec"]["suspend"] = True  # held Suspended until the Job below is in place
    created = live_client.create(AW, aw)
    eventually(lambda: phase(live_client, ns, "again") == keys.PHASE_SUSPENDED, what="Suspended")
    job = json.loads(json.dumps(aw["spec"]["components"][0]["template"]))
    job["metadata"] = {"name": "again-job", "namespace": ns, "labels": {keys.APPWRAPPER_LABEL: "again"},
                       "ownerReferences": [{"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
                                            "name": "again", "uid": created["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}]}
    orphan = live_client.create(JOBS, job)
    live_client.patch(AW, "again", ns, {"spec": {"suspend": False}})
    eventually(lambda: phase(live_client, ns, "again") == keys.PHASE_RUNNING, timeout=30,
               what=lambda: f"Running, got {phase(live_client, ns, 'again')!r}")
    component = live_client.get(AW, "again", ns)["status"]["componentStatus"][0]
    assert component["name"] == "again-job"
    assert [c["reason"] for c in component["conditions"] if c["type"] == keys.COND_RESOURCES_DEPLOYED] == [
        keys.REASON_COMPONENT_CREATED]
    jobs = [j for j in live_client.list(JOBS, ns)["items"]
            if (j["metadata"].get("ownerReferences") or [{}])[0].get("uid") == created["metadata"]["uid"]]
    assert [j["metadata"]["uid"] for j in jobs] == [orphan["metadata"]["uid"]], "adopted, not created a second time"
