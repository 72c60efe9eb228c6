"""AppWrapper fault tolerance end to end, as upstream's e2e tests and controller say (docs/appwrapper-acceptance.md).

Every AppWrapper is applied by alice with the real kubectl through the real gateway; the real
`batchgate controller` admits it (Kueue semantics) and runs its lifecycle; simulated kubelets run
the pods as their behaviour annotation says. What is asserted is what alice sees: `kubectl get aw`
(every version, through a watch), its columns, `kubectl describe` events, and the pods and
wrapped objects in her namespace. Grace periods are set short through the fault-tolerance
annotations, in wall-clock time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml

from batchgate import keys
from batchgate.clock import parse_time
from localcluster.sim.nodes import HEALTH_LABEL
from tests.e2e.appwrapper_harness import (DEDICATED, FLAVOR_LABEL, AwStack, Scenario, appwrapper, condition,
                                          eventually, fault_tolerance, job, new_scenario, pod, pod_template,
                                          policy_configmap, pytorchjob, start_stack, team_controller_binding)

RUNNING = {"startAfter": "5s"}            # starts half a wall second after binding, runs until deleted
FAILS = {"startAfter": "5s", "crashAfter": "5s"}   # exits 1 a second after binding

QUICK = fault_tolerance(retryPausePeriodDuration="1s", failureGracePeriodDuration="0s")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwStack]:
    running = start_stack(tmp_path_factory.mktemp("aw-e2e"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def scenario(stack: AwStack) -> Iterator[Scenario]:
    yield from new_scenario(stack)


def ray_template(container: str, cpu: str) -> dict[str, Any]:
    """A Ray pod template: KubeRay's pods restart in place, and this one runs until deleted."""
    template = pod_template(behavior=RUNNING, cpu=cpu)
    template["spec"]["restartPolicy"] = "Always"
    template["spec"]["containers"][0]["name"] = container
    return template


def status(aw: dict[str, Any]) -> dict[str, Any]:
    return aw.get("status") or {}


def settled_phases(scenario: Scenario, name: str) -> list[str]:
    """The phases seen, without the empty one of the object before the controller first wrote it."""
    return [p for p in scenario.watch.phases(name) if p]


def first_after(versions: list[dict[str, Any]], earlier: str, phase: str) -> dict[str, Any]:
    """The first version in `phase` after one in `earlier`."""
    phases = [status(v).get("phase") for v in versions]
    start = phases.index(earlier)
    return versions[start + phases[start:].index(phase)]


def counts_seen(scenario: Scenario, name: str) -> set[int]:
    return {status(v).get("resettingCount", 0) for v in scenario.watch.versions(name)}


# ---------------------------------------------------------------- the happy path


def test_a_queued_appwrapper_goes_suspended_resuming_running_and_its_pods_carry_label_and_flavor(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("train", [job("train-job", parallelism=2, behavior={"startAfter": "20s"})]))
    aw = scenario.wait_condition("train", "PodsReady", "True", "SufficientPodsReady")

    assert settled_phases(scenario, "train") == ["Suspended", "Resuming", "Running"]
    before_ready = [v for v in scenario.watch.versions("train")
                    if status(v).get("phase") == "Running" and condition(v, "PodsReady").get("status") == "False"]
    assert before_ready, "Running was never shown with PodsReady False while the pods were starting"
    assert {c: condition(aw, c).get("status") for c in ("QuotaReserved", "ResourcesDeployed", "Unhealthy")} == {
        "QuotaReserved": "True", "ResourcesDeployed": "True", "Unhealthy": "False"}
    assert keys.APPWRAPPER_FINALIZER in aw["metadata"].get("finalizers", [])
    assert scenario.row("train") | {"AGE": ""} == {"NAME": "train", "STATUS": "Running", "QUOTA RESERVED": "True",
                                                   "RESOURCES DEPLOYED": "True", "UNHEALTHY": "False", "AGE": ""}

    wrapped = scenario.get("job", "train-job")
    assert wrapped is not None
    owner = wrapped["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner.get("controller")) == (
        "AppWrapper", "train", aw["metadata"]["uid"], True)
    pods = scenario.pods("train")
    assert len(pods) == 2
    for p in pods:
        assert p["metadata"]["labels"][keys.APPWRAPPER_LABEL] == "train"
        assert p["spec"]["nodeSelector"][FLAVOR_LABEL] == "a"
        assert {"key": DEDICATED, "operator": "Exists", "effect": "NoSchedule"} in p["spec"]["tolerations"]
        assert p["status"]["phase"] == "Running"


def test_a_wrapped_statefulset_runs_its_stably_named_pods_and_goes_with_its_appwrapper(scenario: Scenario) -> None:
    """MLBatch allows a StatefulSet as a component; the local cluster's StatefulSet controller runs it."""
    template = pod_template(behavior=RUNNING, cpu="500m")
    template["spec"]["restartPolicy"] = "Always"  # what the API server requires of a StatefulSet's pods
    template["metadata"]["labels"] = {"app": "db"}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": template}}
    scenario.apply(appwrapper("sts", [sts]))
    aw = scenario.wait_condition("sts", "PodsReady", "True", "SufficientPodsReady")
    assert status(aw)["componentStatus"][0]["podSets"] == [{"replicas": 2, "path": "template.spec.template"}]
    pods = scenario.pods("sts")
    assert sorted(p["metadata"]["name"] for p in pods) == ["db-0", "db-1"]
    assert all(p["metadata"]["labels"][keys.APPWRAPPER_LABEL] == "sts" for p in pods)
    ready = scenario.kubectl("get", "sts", "db", "-o", "jsonpath={.status.readyReplicas}").stdout
    assert ready == "2", scenario.story("sts")
    deleted = scenario.kubectl("delete", "aw", "sts", "--timeout=30s", check=False)
    assert deleted.returncode == 0, deleted.stderr
    eventually(lambda: scenario.get("statefulset", "db") is None, lambda: scenario.story("sts"))
    scenario.wait_no_pods("sts")


def test_a_wrapped_raycluster_in_the_codeflare_sdks_shape_runs_and_goes_with_its_appwrapper(scenario: Scenario) -> None:
    """The CodeFlare SDK's default shape: a RayCluster (head + one worker group) in an AppWrapper."""
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "raytest"},
               "spec": {"rayVersion": "2.9.0",
                        "headGroupSpec": {"rayStartParams": {}, "template": ray_template("ray-head", "500m")},
                        "workerGroupSpecs": [{"groupName": "small-group", "replicas": 2, "minReplicas": 2,
                                              "maxReplicas": 2, "rayStartParams": {},
                                              "template": ray_template("ray-worker", "500m")}]}}
    scenario.apply(appwrapper("ray", [cluster]))
    aw = scenario.wait_condition("ray", "PodsReady", "True", "SufficientPodsReady")
    assert [p.get("replicas") for p in status(aw)["componentStatus"][0]["podSets"]] == [1, 2]
    pods = scenario.pods("ray")
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]
    state = scenario.kubectl("get", "raycluster", "raytest", "-o", "jsonpath={.status.state}").stdout
    assert state == "ready", scenario.story("ray")
    deleted = scenario.kubectl("delete", "aw", "ray", "--timeout=30s", check=False)
    assert deleted.returncode == 0, deleted.stderr
    eventually(lambda: scenario.get("raycluster", "raytest") is None, lambda: scenario.story("ray"))
    scenario.wait_no_pods("ray")


def test_a_top_level_rayjob_with_a_queue_label_is_admitted_and_runs_to_completion(scenario: Scenario) -> None:
    head = pod_template(behavior=RUNNING, cpu="500m")
    head["spec"]["restartPolicy"] = "Always"
    # The nodes are tainted for the flavor: the submitter gets the flavor's toleration on admission
    # only through a template of its own, as with Kueue (KubeRay's default submitter would stay Pending).
    submitter = pod_template(behavior={"startAfter": "5s", "runFor": "20s"}, cpu="500m")
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob",
              "metadata": {"name": "rj", "labels": {keys.QUEUE_NAME_LABEL: "default-queue"}},
              "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
                       "submitterPodTemplate": submitter,
                       "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": head},
                                          "workerGroupSpecs": []}}}
    scenario.apply(rayjob)

    def finished() -> dict[str, Any] | None:
        found = scenario.get("rayjob", "rj") or {}
        return found if (found.get("status") or {}).get("jobDeploymentStatus") == "Complete" else None

    done = eventually(finished, lambda: scenario.kubectl("describe", "rayjob", "rj").stdout)
    assert done["status"]["jobStatus"] == "SUCCEEDED"
    [workload] = scenario.items("workloads")
    assert condition(workload, "Admitted")["status"] == "True"
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["head", "submitter"]


def test_a_top_level_raycluster_without_a_queue_label_is_denied_with_the_rule_and_the_field(scenario: Scenario) -> None:
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "unqueued"},
               "spec": {"headGroupSpec": {"template": pod_template()}, "workerGroupSpecs": []}}
    denied = scenario.kubectl("apply", "-f", "-", stdin=json.dumps(cluster), check=False)
    assert denied.returncode == 1
    assert "QueueRequired" in denied.stderr and "metadata.labels[kueue.x-k8s.io/queue-name]" in denied.stderr, \
        denied.stderr


def test_an_appwrapper_whose_pods_all_succeed_is_succeeded_releases_quota_then_its_ttl_deletes_the_components(
        scenario: Scenario) -> None:
    done = {"startAfter": "5s", "runFor": "10s"}
    scenario.apply(appwrapper("done", [job("done-job", parallelism=2, completions=2, behavior=done)],
                              annotations=fault_tolerance(successTTLDuration="3s")))
    aw = scenario.wait_phase("done", "Succeeded")
    first_succeeded = next(v for v in scenario.watch.versions("done") if status(v).get("phase") == "Succeeded")
    assert condition(first_succeeded, "QuotaReserved")["status"] == "False"
    assert condition(first_succeeded, "ResourcesDeployed")["status"] == "True"
    assert condition(aw, "Unhealthy").get("status") != "True"

    aw = scenario.wait_condition("done", "ResourcesDeployed", "False", timeout=20)
    assert status(aw)["phase"] == "Succeeded"
    eventually(lambda: scenario.get("job", "done-job") is None, lambda: scenario.story("done"))
    scenario.wait_no_pods("done")
    workload = scenario.items("workloads")
    assert [condition(w, "Finished").get("status") for w in workload] == ["True"]
    deleted = scenario.kubectl("delete", "aw", "done", "--timeout=30s", check=False)
    assert deleted.returncode == 0 and scenario.get("aw", "done") is None, deleted.stderr


def test_an_appwrapper_managed_by_another_controller_is_left_alone(scenario: Scenario) -> None:
    foreign = appwrapper("foreign", [pod("foreign-pod", behavior=RUNNING)])
    foreign["spec"]["managedBy"] = "example.com/another-controller"
    scenario.apply(foreign)
    time.sleep(3)
    aw = scenario.aw("foreign")
    assert not status(aw).get("phase") and not status(aw).get("conditions"), status(aw)
    assert keys.APPWRAPPER_FINALIZER not in aw["metadata"].get("finalizers", [])
    assert scenario.get("pod", "foreign-pod") is None


# ---------------------------------------------------------------- quota


def test_a_third_appwrapper_waits_suspended_while_two_fill_the_quota_and_runs_when_one_is_deleted(
        scenario: Scenario) -> None:
    for name in ("first", "second"):
        scenario.apply(appwrapper(name, [job(f"{name}-job", cpu="2", behavior=RUNNING)]))
        scenario.wait_phase(name, "Running")
    scenario.apply(appwrapper("third", [job("third-job", cpu="2", behavior=RUNNING)]))
    scenario.wait_phase("third", "Suspended")
    time.sleep(3)
    aw = scenario.aw("third")
    assert status(aw)["phase"] == "Suspended" and aw["spec"]["suspend"] is True
    assert condition(aw, "QuotaReserved").get("status") != "True"
    assert scenario.pods("third") == []

    scenario.kubectl("delete", "aw", "first", "--timeout=30s")
    scenario.wait_phase("third", "Running")
    assert settled_phases(scenario, "third") == ["Suspended", "Resuming", "Running"]


@pytest.mark.parametrize("wrapped", [
    pytest.param(job("whole", parallelism=2, cpu="2", behavior=RUNNING), id="a wrapped Job"),
    pytest.param(pytorchjob("whole", workers=1, cpu="2", behavior=RUNNING), id="a wrapped PyTorchJob"),
])
def test_an_appwrapper_whose_child_fills_the_whole_quota_still_runs_because_the_child_is_not_queued_again(
        scenario: Scenario, wrapped: dict[str, Any]) -> None:
    scenario.apply(appwrapper("full", [wrapped]))
    scenario.wait_condition("full", "PodsReady", "True")
    workloads = scenario.items("workloads")
    assert [w["metadata"]["ownerReferences"][0]["kind"] for w in workloads] == ["AppWrapper"]
    child = scenario.get(wrapped["kind"].lower(), "whole")
    assert child is not None
    suspend = child["spec"].get("suspend", child["spec"].get("runPolicy", {}).get("suspend"))
    assert not suspend
    assert len(scenario.pods("full")) == 2


def test_a_higher_priority_appwrapper_preempts_a_running_one_which_suspends_releases_quota_and_runs_again_later(
        scenario: Scenario) -> None:
    low = {keys.PRIORITY_CLASS_LABEL: "aw-e2e-low"}
    high = {keys.PRIORITY_CLASS_LABEL: "aw-e2e-high"}
    scenario.apply(appwrapper("low", [job("low-job", cpu="4", behavior=RUNNING)], labels=low))
    scenario.wait_condition("low", "PodsReady", "True")
    scenario.apply(appwrapper("high", [job("high-job", cpu="4", behavior={"startAfter": "5s", "runFor": "30s"})],
                              labels=high))

    eventually(lambda: settled_phases(scenario, "low")[:5] == ["Suspended", "Resuming", "Running", "Suspending",
                                                               "Suspended"], lambda: scenario.story("low"))
    suspended = first_after(scenario.watch.versions("low"), "Running", "Suspended")
    assert condition(suspended, "QuotaReserved")["status"] == "False"
    assert condition(suspended, "ResourcesDeployed")["status"] == "False"
    scenario.wait_phase("high", "Running")
    assert scenario.pods("low") == []

    assert "Suspending" in scenario.describe("low")
    scenario.wait_phase("high", "Succeeded")
    aw = scenario.wait_condition("low", "PodsReady", "True")
    assert status(aw).get("resettingCount", 0) == 0
    assert settled_phases(scenario, "low")[-3:] == ["Suspended", "Resuming", "Running"]


def test_a_queued_raycluster_preempted_by_a_higher_priority_appwrapper_keeps_its_object_and_runs_again_later(
        scenario: Scenario) -> None:
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
               "metadata": {"name": "rc", "labels": {keys.QUEUE_NAME_LABEL: "default-queue",
                                                     keys.PRIORITY_CLASS_LABEL: "aw-e2e-low"}},
               "spec": {"headGroupSpec": {"rayStartParams": {}, "template": ray_template("ray-head", "1")},
                        "workerGroupSpecs": [{"groupName": "w", "replicas": 3, "minReplicas": 3, "maxReplicas": 3,
                                              "rayStartParams": {}, "template": ray_template("ray-worker", "1")}]}}
    scenario.apply(cluster)

    def state() -> str:
        return ((scenario.get("raycluster", "rc") or {}).get("status") or {}).get("state", "")

    def ray_pods() -> list[dict[str, Any]]:
        return scenario.items("pods", "ray.io/cluster=rc")

    eventually(lambda: state() == "ready", lambda: scenario.kubectl("describe", "raycluster", "rc").stdout)
    scenario.apply(appwrapper("high", [job("high-job", cpu="4", behavior={"startAfter": "5s", "runFor": "30s"})],
                              labels={keys.PRIORITY_CLASS_LABEL: "aw-e2e-high"}))
    eventually(lambda: scenario.get("raycluster", "rc")["spec"].get("suspend") is True and not ray_pods(),
               lambda: scenario.kubectl("describe", "raycluster", "rc").stdout)
    assert state() == "suspended", "the object is kept, suspended, its pods gone"
    scenario.wait_phase("high", "Running")
    scenario.wait_phase("high", "Succeeded")
    eventually(lambda: state() == "ready" and len(ray_pods()) == 4,
               lambda: scenario.kubectl("describe", "raycluster", "rc").stdout)


def test_a_resetting_appwrapper_preempted_during_its_retry_pause_suspends_and_gives_its_quota_to_the_other(
        scenario: Scenario) -> None:
    low = {keys.PRIORITY_CLASS_LABEL: "aw-e2e-low"}
    scenario.apply(appwrapper("pausing", [job("pausing-job", cpu="4", behavior=FAILS)], labels=low, annotations={
        **fault_tolerance(failureGracePeriodDuration="0s", retryPausePeriodDuration="60s", retryLimit="3")}))
    scenario.wait_seen("pausing", "Resetting")
    scenario.apply(appwrapper("urgent", [job("urgent-job", cpu="4", behavior=RUNNING)],
                              labels={keys.PRIORITY_CLASS_LABEL: "aw-e2e-high"}))
    scenario.wait_phase("urgent", "Running")
    aw = scenario.wait_phase("pausing", "Suspended")
    assert settled_phases(scenario, "pausing")[-3:] == ["Resetting", "Suspending", "Suspended"]
    assert condition(aw, "QuotaReserved")["status"] == "False"
    assert status(aw)["resettingCount"] == 1
    assert scenario.pods("pausing") == []


def test_a_suspended_appwrapper_that_was_never_admitted_is_deleted_at_once(scenario: Scenario) -> None:
    scenario.apply(appwrapper("toobig", [pod("toobig-pod", cpu="8", behavior=RUNNING)]))
    scenario.wait_phase("toobig", "Suspended")
    assert scenario.items("workloads"), "the AppWrapper should be queued"
    deleted = scenario.kubectl("delete", "aw", "toobig", "--timeout=15s", check=False)
    assert deleted.returncode == 0 and scenario.get("aw", "toobig") is None, deleted.stderr
    eventually(lambda: not scenario.items("workloads"), lambda: "its Workload stayed")


# ---------------------------------------------------------------- faults, resets, retry limit


def test_a_failing_job_with_retry_limit_2_is_reset_twice_then_failed_with_resetting_count_2(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("flaky", [job("flaky-job", behavior=FAILS)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="2")}))
    aw = scenario.wait_phase("flaky", "Failed", timeout=60)
    scenario.wait_seen("flaky", "Failed")  # the watch that records the story may be a moment behind the GET

    assert status(aw)["resettingCount"] == 2
    assert condition(aw, "Unhealthy")["status"] == "True"
    phases = settled_phases(scenario, "flaky")
    assert phases.count("Resetting") == 2, phases
    assert phases[-1] == "Failed"
    assert counts_seen(scenario, "flaky") <= {0, 1, 2}
    assert "Unhealthy" in scenario.describe("flaky")


def test_a_failing_rayjob_in_an_appwrapper_is_reset_and_retried_up_to_the_retry_limit(scenario: Scenario) -> None:
    """A RayJob whose deployment Failed is a failed component, as a Job or PyTorchJob is (upstream
    leaves this check disabled in appwrapper_controller.go; see failure_policy.job_failure)."""
    head = pod_template(behavior=RUNNING, cpu="500m")
    head["spec"]["restartPolicy"] = "Always"
    submitter = pod_template(behavior=FAILS, cpu="500m")
    # Not a podSet of the AppWrapper (upstream infers only rayClusterSpec's), so it gets no flavor
    # toleration on admission: it names the nodes' taint itself, as a user of such a cluster would.
    submitter["spec"]["tolerations"] = [{"key": DEDICATED, "operator": "Exists", "effect": "NoSchedule"}]
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"},
              "spec": {"entrypoint": "python train.py", "submitterConfig": {"backoffLimit": 0},
                       "submitterPodTemplate": submitter,
                       "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": head},
                                          "workerGroupSpecs": []}}}
    scenario.apply(appwrapper("rayfail", [rayjob], annotations={**QUICK, **fault_tolerance(retryLimit="1")}))
    aw = scenario.wait_phase("rayfail", "Failed", timeout=60)
    assert status(aw)["resettingCount"] == 1
    assert condition(aw, "Unhealthy")["reason"] == "FailedComponent", scenario.story("rayfail")
    assert "rj (AppFailed" in condition(aw, "Unhealthy")["message"], condition(aw, "Unhealthy")
    assert settled_phases(scenario, "rayfail").count("Resetting") == 1


def test_a_failed_wrapped_pytorchjob_is_a_failed_component_reset_without_waiting_for_the_failure_grace(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("torch", [pytorchjob("torch-job", behavior=FAILS)], annotations={
        **fault_tolerance(retryLimit="1", failureGracePeriodDuration="60s", retryPausePeriodDuration="1s")}))
    aw = scenario.wait_phase("torch", "Failed", timeout=40)
    assert status(aw)["resettingCount"] == 1
    unhealthy = condition(aw, "Unhealthy")
    assert unhealthy["reason"] == "FailedComponent", unhealthy
    assert settled_phases(scenario, "torch").count("Resetting") == 1


def test_one_failed_pod_with_retry_limit_0_and_no_failure_grace_fails_at_once_then_its_resources_are_deleted(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("once", [pod("once-fails", behavior=FAILS), pod("once-runs", behavior=RUNNING)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="0")}))
    scenario.wait_seen("once", "Failed")
    aw = scenario.wait_condition("once", "ResourcesDeployed", "False")

    first_failed = next(v for v in scenario.watch.versions("once") if status(v).get("phase") == "Failed")
    assert condition(first_failed, "Unhealthy")["reason"] == "FoundFailedPods"
    assert {c: condition(first_failed, c)["status"] for c in ("QuotaReserved", "ResourcesDeployed")} == {
        "QuotaReserved": "True", "ResourcesDeployed": "True"}
    assert "Resetting" not in settled_phases(scenario, "once")
    aw = scenario.wait_condition("once", "QuotaReserved", "False")
    assert status(aw)["phase"] == "Failed" and status(aw).get("resettingCount", 0) == 0
    assert aw["spec"]["suspend"] is False
    scenario.wait_no_pods("once")
    assert scenario.row("once") | {"AGE": ""} == {"NAME": "once", "STATUS": "Failed", "QUOTA RESERVED": "False",
                                                  "RESOURCES DEPLOYED": "False", "UNHEALTHY": "True", "AGE": ""}
    assert "FoundFailedPods" in scenario.describe("once")


def test_a_component_the_api_server_rejects_fails_the_appwrapper_directly_with_create_failed(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("bad", [pod("bad-ok", behavior=RUNNING), pod("bad-no-image", image=None)],
                              annotations=fault_tolerance(retryLimit="3")))
    aw = scenario.wait_phase("bad", "Failed")
    unhealthy = condition(aw, "Unhealthy")
    assert (unhealthy["status"], unhealthy["reason"]) == ("True", "CreateFailed")
    assert "image" in unhealthy["message"]
    assert status(aw).get("resettingCount", 0) == 0
    assert settled_phases(scenario, "bad") == ["Suspended", "Resuming", "Failed"]


def test_a_component_that_already_exists_but_is_not_the_appwrappers_fails_it_directly_with_create_failed(
        scenario: Scenario) -> None:
    mine = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"owner": "alice"}}
    scenario.apply(mine)
    scenario.apply(appwrapper("taken", [pod("taken-pod", behavior=RUNNING), mine],
                              annotations=fault_tolerance(retryLimit="3")))
    aw = scenario.wait_phase("taken", "Failed")
    assert condition(aw, "Unhealthy")["reason"] == "CreateFailed"
    assert status(aw).get("resettingCount", 0) == 0
    kept = scenario.get("configmap", "settings")
    assert kept is not None and not kept["metadata"].get("ownerReferences"), "the AppWrapper took over alice's ConfigMap"
    assert kept["data"] == {"owner": "alice"}


FIX = "bind ClusterRole batchgate-controller-team in namespace {}: see docs/install.md#teams"


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"token": "t"}}


def test_a_wrapped_secret_is_refused_at_submission_naming_the_team_binding_and_runs_once_the_namespace_binds_it(
        scenario: Scenario) -> None:
    scenario.stack.admin("delete", "rolebinding", "-n", scenario.namespace, "batchgate-controller-team")
    refused = scenario.kubectl("apply", "-f", "-", check=False, stdin=yaml.safe_dump(
        appwrapper("unbound", [pod("unbound-pod", behavior=RUNNING), secret("creds")])))
    assert refused.returncode != 0 and FIX.format(scenario.namespace) in refused.stderr, refused.stderr
    scenario.stack.admin("apply", "-f", "-", stdin=team_controller_binding(scenario.stack, scenario.namespace))
    bound = yaml.safe_dump(appwrapper("bound", [pod("bound-pod", behavior=RUNNING), secret("creds")]))
    # The gateway keeps an authorization answer for up to 10 s (--authorization-cache-ttl).
    eventually(lambda: scenario.kubectl("apply", "-f", "-", check=False, stdin=bound).returncode == 0,
               lambda: "the gateway still refuses the AppWrapper after the team binding")
    scenario.wait_phase("bound", "Running")
    made = scenario.get("secret", "creds")
    assert made is not None and made["metadata"]["ownerReferences"][0]["name"] == "bound"


def test_a_queued_wrapped_secret_whose_team_binding_went_meanwhile_fails_at_once_naming_the_fix(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("blocker", [job("blocker-job", cpu="4", behavior=RUNNING)]))
    scenario.wait_phase("blocker", "Running")
    scenario.apply(appwrapper("queued", [job("queued-job", cpu="1", behavior=RUNNING), secret("creds")],
                              annotations=fault_tolerance(retryLimit="3")))
    scenario.wait_phase("queued", "Suspended")
    scenario.stack.admin("delete", "rolebinding", "-n", scenario.namespace, "batchgate-controller-team")
    scenario.kubectl("delete", "aw", "blocker", "--timeout=30s")
    aw = scenario.wait_phase("queued", "Failed")
    unhealthy = condition(aw, "Unhealthy")
    assert unhealthy["reason"] == "CreateFailed" and FIX.format(scenario.namespace) in unhealthy["message"], unhealthy
    assert status(aw).get("resettingCount", 0) == 0, "a refusal of the controller itself was retried"
    assert scenario.get("secret", "creds") is None


def test_a_failed_appwrapper_keeps_its_resources_and_quota_for_the_deletion_on_failure_grace_period(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("debug", [pod("debug-fails", behavior=FAILS), pod("debug-runs", cpu="3", behavior=RUNNING)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="0",
                                                                      deletionOnFailureGracePeriodDuration="4s")}))
    aw = scenario.wait_condition("debug", "DeletingResources", "False", "DeletionPaused")
    assert status(aw)["phase"] == "Failed"
    assert condition(aw, "QuotaReserved")["status"] == "True"
    paused_at = time.monotonic()
    scenario.apply(appwrapper("next", [pod("next-pod", cpu="2", behavior=RUNNING)]))
    time.sleep(2)
    assert condition(scenario.aw("debug"), "ResourcesDeployed")["status"] == "True"
    assert [p["metadata"]["name"] for p in scenario.pods("debug") if p["status"]["phase"] == "Running"] == ["debug-runs"]
    assert status(scenario.aw("next")).get("phase") == "Suspended", "quota of a Failed AppWrapper still deployed was reused"

    scenario.wait_condition("debug", "ResourcesDeployed", "False", timeout=20)
    assert time.monotonic() - paused_at >= 3, "resources deleted before the 4s deletionOnFailureGracePeriod"
    scenario.wait_no_pods("debug")
    assert condition(scenario.aw("debug"), "QuotaReserved")["status"] == "False"
    scenario.wait_phase("next", "Running")


@pytest.mark.parametrize(("kind", "wrapped"), [
    pytest.param("pytorchjob", pytorchjob("gone", behavior=RUNNING), id="a deleted PyTorchJob"),
    pytest.param("job", job("gone", behavior=RUNNING), id="a deleted Job"),
])
def test_deleting_the_running_wrapped_object_fails_the_appwrapper_with_missing_component_and_no_retry(
        scenario: Scenario, kind: str, wrapped: dict[str, Any]) -> None:
    scenario.apply(appwrapper("lost", [wrapped], annotations={**QUICK, **fault_tolerance(retryLimit="3")}))
    scenario.wait_condition("lost", "PodsReady", "True")
    scenario.kubectl("delete", kind, "gone", "--wait=false")
    aw = scenario.wait_phase("lost", "Failed")
    assert condition(aw, "Unhealthy")["reason"] == "MissingComponent"
    assert status(aw).get("resettingCount", 0) == 0
    assert "Resetting" not in settled_phases(scenario, "lost")


def test_a_pod_that_never_starts_exhausts_the_warmup_grace_is_reset_once_then_failed_with_resetting_count_1(
        scenario: Scenario) -> None:
    stuck = {"startAfter": "1h"}
    scenario.apply(appwrapper("stuck", [job("stuck-job", behavior=stuck)], annotations={
        **QUICK, **fault_tolerance(retryLimit="1", warmupGracePeriodDuration="2s")}))
    aw = scenario.wait_phase("stuck", "Failed", timeout=45)
    assert status(aw)["resettingCount"] == 1
    assert condition(aw, "Unhealthy")["reason"] == "InsufficientPodsReady"
    phases = settled_phases(scenario, "stuck")
    assert phases[:3] == ["Suspended", "Resuming", "Running"] and phases.count("Resetting") == 1, phases


def test_the_evict_label_on_a_gpu_pods_node_resets_without_counting_and_the_pod_runs_elsewhere(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("gpu", [job("gpu-job", gpu=1, behavior=RUNNING)], annotations=QUICK))
    scenario.wait_condition("gpu", "PodsReady", "True")
    [first] = scenario.pods("gpu")
    node = first["spec"]["nodeName"]
    label = f"{keys.AUTOPILOT_GPU_HEALTH_LABEL}=EVICT"
    scenario.stack.admin("label", "node", node, label)
    try:
        scenario.wait_seen("gpu", "Resetting")
        resetting = next(v for v in scenario.watch.versions("gpu") if status(v).get("phase") == "Resetting")
        assert condition(resetting, "Unhealthy")["reason"] == "AutopilotNoExecute"
        assert condition(resetting, "QuotaReserved")["status"] == "True"
        scenario.wait(
            "gpu", lambda aw: status(aw).get("phase") == "Running" and condition(aw, "PodsReady").get("status") == "True"
            and "Resetting" in scenario.watch.phases("gpu"), "Running again after the reset")
        aw = scenario.aw("gpu")
        assert status(aw).get("resettingCount", 0) == 0
        assert condition(aw, "Unhealthy")["status"] == "False", "Unhealthy not cleared once running healthy again"
        [again] = scenario.wait_pods("gpu", lambda pods: len(pods) == 1 and pods[0]["metadata"]["uid"] != first["metadata"]["uid"],
                                     "a new pod")
        assert again["spec"]["nodeName"] != node
        terms = again["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert terms and all({"key": keys.AUTOPILOT_GPU_HEALTH_LABEL, "operator": "NotIn", "values": ["TESTING", "EVICT"]}
                             in t["matchExpressions"] for t in terms), "upstream's Autopilot defaults: TESTING too"
        preferred = again["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert {"weight": 50, "preference": {"matchExpressions": [
            {"key": keys.AUTOPILOT_GPU_HEALTH_LABEL, "operator": "NotIn", "values": ["WARN"]}]}} in preferred
    finally:
        scenario.stack.admin("label", "node", node, f"{keys.AUTOPILOT_GPU_HEALTH_LABEL}-")


def test_the_evict_label_leaves_an_appwrapper_without_gpus_running_on_that_node(scenario: Scenario) -> None:
    scenario.apply(appwrapper("cpu", [job("cpu-job", behavior=RUNNING)], annotations=QUICK))
    scenario.wait_condition("cpu", "PodsReady", "True")
    [running] = scenario.pods("cpu")
    node = running["spec"]["nodeName"]
    scenario.stack.admin("label", "node", node, f"{keys.AUTOPILOT_GPU_HEALTH_LABEL}=EVICT")
    try:
        time.sleep(3)
        aw = scenario.aw("cpu")
        assert status(aw)["phase"] == "Running" and condition(aw, "Unhealthy")["status"] == "False"
        assert settled_phases(scenario, "cpu") == ["Suspended", "Resuming", "Running"]
        assert [p["metadata"]["uid"] for p in scenario.pods("cpu")] == [running["metadata"]["uid"]]
        assert "affinity" not in running["spec"] or not running["spec"]["affinity"].get("nodeAffinity")
    finally:
        scenario.stack.admin("label", "node", node, f"{keys.AUTOPILOT_GPU_HEALTH_LABEL}-")


@contextmanager
def fault_tolerance_policy(scenario: Scenario, section: str) -> Iterator[None]:
    """The admin edits the policy ConfigMap's faultTolerance; the running controller reloads it."""
    def apply(extra: str) -> None:
        before = scenario.stack.controller.loaded_policies()
        scenario.stack.admin("apply", "-f", "-", stdin=policy_configmap(extra))
        eventually(lambda: scenario.stack.controller.loaded_policies() > before,
                   lambda: f"the controller did not reload the policy\n{scenario.stack.controller.tail()}")
    apply(section)
    try:
        yield
    finally:
        apply("")


def test_the_policys_fault_tolerance_defaults_apply_to_appwrappers_without_annotations_once_reloaded(
        scenario: Scenario) -> None:
    with fault_tolerance_policy(scenario, "    faultTolerance: {failureGracePeriod: 0s, retryLimit: 0}\n"):
        scenario.apply(appwrapper("plain", [pod("plain-fails", behavior=FAILS), pod("plain-runs", behavior=RUNNING)]))
        aw = scenario.wait_phase("plain", "Failed", timeout=20)
    assert status(aw).get("resettingCount", 0) == 0
    assert condition(aw, "Unhealthy")["reason"] == "FoundFailedPods"


# ---------------------------------------------------------------- failure policy (docs/appwrapper.md)


@pytest.mark.parametrize(("annotations", "behavior"), [
    pytest.param({keys.FAILURE_POLICY_ANNOTATION: json.dumps([{"action": "Fail", "onExitCodes": [42]}])},
                 {"startAfter": "5s", "crashAfter": "5s", "exitCode": 42},
                 id="a failure-policy rule Fail onExitCodes 42 fails on exit 42"),
    pytest.param(fault_tolerance(terminalExitCodes="3"), {"startAfter": "5s", "crashAfter": "5s", "exitCode": 3},
                 id="terminalExitCodes 3 fails on exit 3"),
    pytest.param(fault_tolerance(retryableExitCodes="1"), {"startAfter": "5s", "crashAfter": "5s", "exitCode": 7},
                 id="retryableExitCodes 1 fails on exit 7, which is not retryable"),
])
def test_an_exit_code_the_policy_calls_terminal_fails_the_appwrapper_without_any_retry(
        scenario: Scenario, annotations: dict[str, str], behavior: dict[str, Any]) -> None:
    scenario.apply(appwrapper("exit", [pod("exit-pod", behavior=behavior)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="3"), **annotations}))
    aw = scenario.wait_phase("exit", "Failed")
    assert status(aw).get("resettingCount", 0) == 0
    assert "Resetting" not in settled_phases(scenario, "exit")
    assert condition(aw, "Unhealthy")["reason"] == "FoundFailedPods"


def failure_policy(*rules: dict[str, Any]) -> dict[str, str]:
    return {keys.FAILURE_POLICY_ANNOTATION: json.dumps(list(rules))}


@pytest.mark.parametrize("target", [
    pytest.param("trainer", id="a Fail rule naming the component whose pod failed, by name, fails the AppWrapper"),
    pytest.param(0, id="a Fail rule naming the component whose pod failed, by index, fails the AppWrapper"),
])
def test_a_failure_policy_rule_targeting_the_component_whose_pods_failed_decides(
        scenario: Scenario, target: str | int) -> None:
    rule = {"action": "Fail", "onReasons": ["FoundFailedPods"], "targetComponents": [target]}
    scenario.apply(appwrapper("target", [pod("trainer", behavior=FAILS), pod("helper", behavior=RUNNING)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="3"), **failure_policy(rule)}))
    aw = scenario.wait_phase("target", "Failed", timeout=20)
    assert "Resetting" not in settled_phases(scenario, "target")
    assert status(aw).get("resettingCount", 0) == 0
    assert "failure-policy rule 0" in scenario.describe("target")


def test_a_failure_policy_rule_targeting_another_component_leaves_the_failed_pod_to_the_default_reset(
        scenario: Scenario) -> None:
    rule = {"action": "Fail", "onReasons": ["FoundFailedPods"], "targetComponents": ["helper"]}
    scenario.apply(appwrapper("other", [pod("trainer", behavior=FAILS), pod("helper", behavior=RUNNING)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="3"), **failure_policy(rule)}))
    scenario.wait_seen("other", "Resetting")
    assert scenario.wait(
        "other", lambda aw: status(aw).get("resettingCount", 0) >= 1, "a counted reset")["status"]["phase"] != "Failed"


def test_a_failure_policy_rule_on_the_wrapped_jobs_own_reason_fails_the_appwrapper_when_the_job_fails(
        scenario: Scenario) -> None:
    rule = {"action": "Fail", "onReasons": ["BackoffLimitExceeded"]}
    scenario.apply(appwrapper("limit", [job("limit-job", behavior=FAILS)], annotations={
        **QUICK, **fault_tolerance(retryLimit="3", failureGracePeriodDuration="20s"), **failure_policy(rule)}))
    aw = scenario.wait_phase("limit", "Failed", timeout=20)
    unhealthy = condition(aw, "Unhealthy")
    assert unhealthy["reason"] == "FailedComponent", unhealthy
    assert "BackoffLimitExceeded" in unhealthy["message"]
    assert "Resetting" not in settled_phases(scenario, "limit")


def test_a_failure_policy_rule_reset_without_counting_resets_a_failed_pod_again_and_again_at_count_0(
        scenario: Scenario) -> None:
    rule = [{"action": "ResetWithoutCounting", "onReasons": ["FoundFailedPods"]}]
    scenario.apply(appwrapper("again", [pod("again-pod", behavior=FAILS)], annotations={
        **QUICK, **fault_tolerance(retryLimit="1"), keys.FAILURE_POLICY_ANNOTATION: json.dumps(rule)}))
    eventually(lambda: settled_phases(scenario, "again").count("Resetting") >= 2,
               lambda: scenario.story("again"), timeout=45)
    assert counts_seen(scenario, "again") == {0}
    assert "Failed" not in settled_phases(scenario, "again")


# ---------------------------------------------------------------- deletion and restarts


def test_deleting_a_running_appwrapper_removes_its_components_pods_and_finalizer(scenario: Scenario) -> None:
    scenario.apply(appwrapper("bye", [job("bye-job", parallelism=2, behavior=RUNNING)]))
    scenario.wait_condition("bye", "PodsReady", "True")
    deleted = scenario.kubectl("delete", "aw", "bye", "--timeout=30s", check=False)
    assert deleted.returncode == 0, deleted.stderr
    assert scenario.get("aw", "bye") is None
    assert scenario.get("job", "bye-job") is None
    scenario.wait_no_pods("bye")


SILENCE_SETTLES = 1.0


@contextmanager
def silent(scenario: Scenario, node: str) -> Iterator[None]:
    """The node's kubelet stops answering: its pods, once deleted, stay Terminating until force-deleted.

    The kubelets learn the label from their node watch, which has no other sign to wait for (the
    silence shows in the node's Lease only at the next 10 s heartbeat); a pod deleted before that
    watch event arrives would still be let go by its kubelet, so the label is given a second."""
    scenario.stack.admin("label", "node", node, f"{HEALTH_LABEL}=unreachable")
    time.sleep(SILENCE_SETTLES)
    try:
        yield
    finally:
        scenario.stack.admin("label", "node", node, f"{HEALTH_LABEL}-")


def test_deleting_an_appwrapper_whose_pod_is_stuck_on_a_silent_node_force_deletes_it_after_the_grace_period(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("stuck", [job("stuck-job", behavior=RUNNING)],
                              annotations=fault_tolerance(forcefulDeletionGracePeriodDuration="3s")))
    scenario.wait_condition("stuck", "PodsReady", "True")
    [running] = scenario.pods("stuck")
    with silent(scenario, running["spec"]["nodeName"]):
        deleted_at = time.monotonic()
        scenario.kubectl("delete", "aw", "stuck", "--wait=false")
        time.sleep(1.5)
        aw = scenario.aw("stuck")
        assert condition(aw, "DeletingResources")["status"] == "True"
        assert [p["metadata"].get("deletionTimestamp") is not None for p in scenario.pods("stuck")] == [True]
        eventually(lambda: scenario.get("aw", "stuck") is None, lambda: scenario.story("stuck"), timeout=20)
        # lastTransitionTime has whole seconds, so the grace may end up to a second early.
        assert time.monotonic() - deleted_at >= 3 - 1, "forced before forcefulDeletionGracePeriod"
        assert scenario.pods("stuck") == []
        assert "Terminating" in settled_phases(scenario, "stuck")


def test_a_failed_appwrapper_held_for_deletion_on_failure_then_stuck_on_a_silent_node_is_force_deleted_in_time(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("held", [pod("held-fails", behavior=FAILS), pod("held-runs", behavior=RUNNING)],
                              annotations={**QUICK, **fault_tolerance(retryLimit="0",
                                                                      deletionOnFailureGracePeriodDuration="2s",
                                                                      forcefulDeletionGracePeriodDuration="2s")}))
    scenario.wait_condition("held", "DeletingResources", "False", "DeletionPaused")
    runs = scenario.get("pod", "held-runs")
    assert runs is not None
    with silent(scenario, runs["spec"]["nodeName"]):
        scenario.wait_condition("held", "DeletingResources", "True", "DeletionInitiated")
        aw = scenario.wait_condition("held", "ResourcesDeployed", "False", timeout=20)
        assert condition(aw, "QuotaReserved")["status"] == "False"
        assert scenario.pods("held") == []


def test_a_controller_restarted_while_an_appwrapper_runs_leaves_its_components_and_pods_alone(
        scenario: Scenario) -> None:
    scenario.apply(appwrapper("steady", [job("steady-job", parallelism=2, behavior=RUNNING)]))
    scenario.wait_condition("steady", "PodsReady", "True")
    pods = {p["metadata"]["uid"] for p in scenario.pods("steady")}
    child = scenario.get("job", "steady-job")
    controller = scenario.stack.controller
    controller.stop()
    controller.start()
    time.sleep(3)
    aw = scenario.aw("steady")
    assert (status(aw)["phase"], status(aw).get("resettingCount", 0)) == ("Running", 0)
    assert condition(aw, "PodsReady")["status"] == "True"
    assert {p["metadata"]["uid"] for p in scenario.pods("steady")} == pods
    assert scenario.get("job", "steady-job")["metadata"]["uid"] == child["metadata"]["uid"]
    assert settled_phases(scenario, "steady") == ["Suspended", "Resuming", "Running"], scenario.story("steady")


def test_a_controller_restarted_mid_grace_period_resumes_the_timer_from_the_condition_instead_of_starting_over(
        scenario: Scenario) -> None:
    warmup = 8
    scenario.apply(appwrapper("patient", [job("patient-job", behavior={"startAfter": "1h"})], annotations={
        **QUICK, **fault_tolerance(retryLimit="0", warmupGracePeriodDuration=f"{warmup}s")}))
    # Upstream (HEAD) leaves PodsReady False with the reason Resuming gave it while pods warm up.
    scenario.wait("patient", lambda aw: status(aw).get("phase") == "Running"
                  and condition(aw, "PodsReady").get("status") == "False", "Running, pods not ready")
    scenario.wait_pods("patient", lambda pods: len(pods) == 1, "the pod, pending")
    deployed_at = parse_time(condition(scenario.aw("patient"), "ResourcesDeployed")["lastTransitionTime"])
    controller = scenario.stack.controller
    controller.stop()
    try:
        time.sleep(2)
        assert status(scenario.aw("patient"))["phase"] == "Running"
    finally:
        controller.start()
    restarted_at = time.time()

    aw = scenario.wait_phase("patient", "Failed", timeout=30)
    failed_at = parse_time(condition(aw, "Unhealthy")["lastTransitionTime"])
    waited = (failed_at - deployed_at).total_seconds()
    assert warmup - 1 <= waited, f"failed {waited}s after deployment, before the {warmup}s warmup grace"
    assert failed_at.timestamp() < restarted_at + warmup - 1, (
        f"failed {failed_at.timestamp() - restarted_at:.1f}s after the restart: the grace period started over")
