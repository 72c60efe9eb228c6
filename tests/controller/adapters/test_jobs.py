"""Queued jobs on the local cluster with the real controller: a Workload per job, admission starts
the job with its flavor, eviction stops it and releases quota only once its pods are gone, a
finished job finishes its Workload, a deleted job takes its Workload along; and the same with two
controller processes handing the Lease over."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from typing import Any, Iterator

import pytest
import requests

from batchgate.kinds import QUEUED
from controller.adapters.kube import EVENTS, RESOURCES, ApiError, KubeClient
from controller.adapters.manager import Controller
from controller.decisions.jobs.workloads import workload_name
from tests.controller.builders import a_job, a_pytorch_appwrapper, stored_sample
from tests.controller.cluster import (controller_kubeconfig, eventually, get_or_none, kubectl, subprocess_env,
                                     started_controller)

pytestmark = pytest.mark.timeout(120)
JOBS, WL, AW, RF = RESOURCES["Job"], RESOURCES["Workload"], RESOURCES["AppWrapper"], RESOURCES["ResourceFlavor"]
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def client(cluster: Any) -> Iterator[KubeClient]:
    c = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    c.create(RF, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "a100"},
                  "spec": {"nodeLabels": {"gpu": "a100"},
                           "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}})
    yield c
    c.close()


@pytest.fixture(scope="module")
def controller(cluster: Any) -> Iterator[Controller]:
    yield from started_controller(cluster)


def workload_of(client: KubeClient, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    return get_or_none(client, WL, workload_name(QUEUED[kind], meta["name"], meta["uid"]), meta["namespace"])


def conditions(*items: tuple[str, str, str]) -> list[dict[str, Any]]:
    return [{"type": t, "status": s, "reason": r, "message": f"{t} by test", "lastTransitionTime": NOW} for t, s, r in items]


def admit(client: KubeClient, wl: dict[str, Any]) -> None:
    """What the admission loop writes when quota is reserved."""
    client.patch(WL, wl["metadata"]["name"], wl["metadata"]["namespace"], {"status": {
        "admission": {"clusterQueue": "cq-a", "podSetAssignments": [
            {"name": ps["name"], "flavors": {"cpu": "a100"}, "count": ps["count"]} for ps in wl["spec"]["podSets"]]},
        "conditions": conditions(("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))}},
        subresource="status")


def evict(client: KubeClient, wl: dict[str, Any]) -> None:
    current = client.get(WL, wl["metadata"]["name"], wl["metadata"]["namespace"])
    conds = [c for c in current["status"]["conditions"] if c["type"] != "Evicted"]
    conds += conditions(("Evicted", "True", "Preempted"))
    client.patch(WL, wl["metadata"]["name"], wl["metadata"]["namespace"], {"status": {"conditions": conds}},
                 subresource="status")


def cond(obj: dict[str, Any] | None, type_: str) -> str | None:
    return next((c["status"] for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def test_a_queued_job_runs_when_admitted_and_stops_when_evicted(cluster: Any, client: KubeClient,
                                                               controller: Controller, namespace: str) -> None:
    job = a_job("train", parallelism=3)
    job["metadata"]["namespace"] = namespace
    for field in ("uid",):
        job["metadata"].pop(field)
    job = client.create(JOBS, job)
    wl = eventually(lambda: workload_of(client, "Job", job), what="the Workload")
    assert wl["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
    assert wl["spec"]["queueName"] == "default-queue"

    admit(client, wl)
    started = eventually(lambda: (j := client.get(JOBS, "train", namespace))["spec"]["suspend"] is False and j,
                         what="the job to start")
    pod = started["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu": "a100"}
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]

    client.patch(JOBS, "train", namespace, {"status": {"active": 3}}, subresource="status")  # its pods run
    eventually(lambda: (controller.store.get("Job", namespace, "train") or {}).get("status", {}).get("active") == 3)
    evict(client, wl)
    # Two writes: suspend first, then the template restored (only a suspended Job's template may change).
    eventually(lambda: client.get(JOBS, "train", namespace)["spec"]["suspend"] is True, what="the job to stop")
    eventually(lambda: "nodeSelector" not in client.get(JOBS, "train", namespace)["spec"]["template"]["spec"],
               what="the submitted template to be restored")
    assert cond(workload_of(client, "Job", job), "QuotaReserved") == "True", "quota is held while pods run"

    client.patch(JOBS, "train", namespace, {"status": {"active": 0}}, subresource="status")  # pods gone
    released = eventually(lambda: cond(w := workload_of(client, "Job", job), "QuotaReserved") == "False" and w,
                          what="the quota release")
    assert "admission" not in released["status"]
    assert cond(released, "Requeued") == "True" and cond(released, "Evicted") == "True"

    described = kubectl(cluster.kubeconfig, "describe", "job", "train", "-n", namespace).stdout
    for reason in ("CreatedWorkload", "Started", "Stopped"):
        assert reason in described
    assert "Admitted by clusterQueue cq-a" in described


def test_a_finished_job_finishes_its_workload_and_a_deleted_one_takes_it_along(
        client: KubeClient, controller: Controller, namespace: str) -> None:
    job = a_job("done", parallelism=1)
    job["metadata"]["namespace"] = namespace
    job["metadata"].pop("uid")
    job = client.create(JOBS, job)
    wl = eventually(lambda: workload_of(client, "Job", job), what="the Workload")
    admit(client, wl)
    eventually(lambda: client.get(JOBS, "done", namespace)["spec"]["suspend"] is False, what="the start")
    client.patch(JOBS, "done", namespace, {"status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "Done", "message": "all pods succeeded"}]}}, subresource="status")
    finished = eventually(lambda: cond(w := workload_of(client, "Job", job), "Finished") == "True" and w,
                          what="the Workload to finish")
    (finished_cond,) = [c for c in finished["status"]["conditions"] if c["type"] == "Finished"]
    assert (finished_cond["reason"], finished_cond["message"]) == ("Succeeded", "all pods succeeded")
    told = eventually(lambda: [(e["involvedObject"]["kind"], e["reason"]) for e in client.list(EVENTS, namespace)["items"]
                               if e["reason"] in ("FinishedWorkload", "Succeeded")] or None, what="the finish Event")
    assert told == [("Job", "FinishedWorkload")], "the job tells its Workload finished; the Workload's condition says it"

    client.delete(JOBS, "done", namespace)
    eventually(lambda: workload_of(client, "Job", job) is None, what="garbage collection of the Workload")


def test_an_admitted_appwrapper_gets_its_flavors_through_pod_set_infos(
        client: KubeClient, controller: Controller, namespace: str) -> None:
    aw = a_pytorch_appwrapper()
    aw["metadata"] = {"name": "aw", "namespace": namespace, "labels": aw["metadata"]["labels"]}
    aw["spec"]["suspend"] = True
    aw = client.create(AW, aw)
    wl = eventually(lambda: workload_of(client, "AppWrapper", aw), what="the Workload")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("aw-0", 1), ("aw-1", 2)]
    admit(client, wl)
    started = eventually(lambda: (a := client.get(AW, "aw", namespace))["spec"].get("suspend") is False and a,
                         what="the AppWrapper to resume")
    assert [i["nodeSelector"] for i in started["spec"]["components"][0]["podSetInfos"]] == [{"gpu": "a100"}] * 2


def test_a_job_that_cannot_have_a_workload_gets_a_warning_event(
        cluster: Any, client: KubeClient, controller: Controller, namespace: str) -> None:
    bad = a_job("bad", labels={"kueue.x-k8s.io/priority-class": "gold"})
    bad["metadata"]["namespace"] = namespace
    bad["metadata"].pop("uid")
    client.create(JOBS, bad)
    described = eventually(
        lambda: "InvalidJob" in (out := kubectl(cluster.kubeconfig, "describe", "job", "bad", "-n", namespace).stdout) and out,
        what="the warning event")
    assert 'workload priority class "gold" not found' in described
    assert client.list(WL, namespace)["items"] == []


def test_a_job_that_named_a_priority_class_before_it_existed_gets_its_workload_once_the_class_appears(
        cluster: Any, client: KubeClient, controller: Controller, namespace: str) -> None:
    early = a_job("early", labels={"kueue.x-k8s.io/priority-class": "silver"})
    early["metadata"]["namespace"] = namespace
    early["metadata"].pop("uid")
    early = client.create(JOBS, early)
    eventually(lambda: "InvalidJob" in kubectl(cluster.kubeconfig, "describe", "job", "early", "-n", namespace).stdout,
               what="the warning event")
    client.create(RESOURCES["WorkloadPriorityClass"], {"apiVersion": "kueue.x-k8s.io/v1beta1",
                                                       "kind": "WorkloadPriorityClass",
                                                       "metadata": {"name": "silver"}, "value": 7})
    try:
        wl = eventually(lambda: workload_of(client, "Job", early), what="the Workload once the class exists")
        assert (wl["spec"]["priorityClassName"], wl["spec"]["priority"]) == ("silver", 7)
    finally:
        client.delete(RESOURCES["WorkloadPriorityClass"], "silver")


def test_a_job_inside_a_queued_appwrapper_is_never_queued_itself(
        client: KubeClient, controller: Controller, namespace: str) -> None:
    aw = stored_sample("alice/appwrapper-job.yaml")
    aw["metadata"] = {"name": "parent", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "q"}}
    aw["spec"]["suspend"] = True
    aw = client.create(AW, aw)
    eventually(lambda: workload_of(client, "AppWrapper", aw), what="the parent's Workload")
    child = a_job("child", suspend=False, owner={"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                                                 "name": "parent", "uid": aw["metadata"]["uid"], "controller": True})
    child["metadata"]["namespace"] = namespace
    child["metadata"].pop("uid")
    child = client.create(JOBS, child)
    eventually(lambda: controller.store.get("Job", namespace, "child") is not None and controller.settled(),
               what="the controller to see the child")
    assert workload_of(client, "Job", child) is None
    assert client.get(JOBS, "child", namespace)["spec"]["suspend"] is False, "the parent's admission covers it"


class ControllerProcess:
    def __init__(self, kubeconfig: str, identity: str) -> None:
        self.identity = identity
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", kubeconfig, "--identity", identity,
             "--metrics-address", "127.0.0.1", "--metrics-port", "0", "--lease-duration", "3",
             "--renew-deadline", "2", "--retry-period", "0.5", "--log-level", "warning"],
            env=subprocess_env(), stderr=subprocess.PIPE, text=True)
        self.port = 0
        found = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                match = re.search(r"probes on http://127\.0\.0\.1:(\d+)", line)
                if match:
                    self.port = int(match.group(1))
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        assert found.wait(30), "the controller announces its probe port"

    def get(self, path: str) -> requests.Response:
        return requests.get(f"http://127.0.0.1:{self.port}{path}", timeout=5)

    def leader_metric(self) -> str:
        return re.search(r"^batchgate_leader (\S+)", self.get("/metrics").text, re.M).group(1)  # type: ignore[union-attr]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)


def test_two_controller_processes_hand_over_the_lease(cluster: Any, client: KubeClient, namespace: str) -> None:
    try:
        client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": "batchgate-system"}})
    except ApiError as exc:
        assert exc.already_exists
    lease = RESOURCES["Lease"]

    def holder() -> str | None:
        try:
            return client.get(lease, "batchgate-controller", "batchgate-system")["spec"]["holderIdentity"]
        except ApiError as exc:
            assert exc.not_found
            return None

    identity = str(controller_kubeconfig(cluster))  # the controller's account, Lease Role included
    first = ControllerProcess(identity, "first")
    second = None
    try:
        eventually(lambda: holder() == "first", timeout=20, what="the first process to lead")
        second = ControllerProcess(identity, "second")
        eventually(lambda: second.get("/readyz").status_code == 200, timeout=20, what="the standby's warm cache")
        assert second.leader_metric() == "0.0" and holder() == "first"

        assert first.stop(signal.SIGKILL) == -signal.SIGKILL  # the leader dies without releasing
        eventually(lambda: holder() == "second", timeout=15, what="the standby to take over")
        eventually(lambda: second.leader_metric() == "1.0", what="the new leader's metric")

        job = a_job("after-handover")
        job["metadata"]["namespace"] = namespace
        job["metadata"].pop("uid")
        job = client.create(JOBS, job)
        eventually(lambda: workload_of(client, "Job", job), timeout=15, what="the new leader to act")

        assert second.stop() == 0
        assert holder() == "", "a clean shutdown releases the lease"
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop(signal.SIGKILL)


def test_the_policy_configmap_is_followed_and_an_invalid_edit_keeps_the_last_good_one(
        client: KubeClient, controller: Controller) -> None:
    cm = RESOURCES["ConfigMap"]
    try:
        client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": "batchgate-system"}})
    except ApiError as exc:
        assert exc.already_exists
    client.create(cm, {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "batchgate-policy", "namespace": "batchgate-system"},
                       "data": {"policy.yaml": "queues:\n  defaultQueueName: team-queue\n"}})
    try:
        eventually(lambda: controller.policy.queues.default_queue_name == "team-queue", what="the policy to load")
        assert not controller.admission.state.fair_sharing.enable
        client.patch(cm, "batchgate-policy", "batchgate-system", {"data": {
            "policy.yaml": "queues:\n  defaultQueueName: team-queue\nfairSharing:\n  enable: true\n"}})
        eventually(lambda: controller.admission.state.fair_sharing.enable, what="fair sharing to switch on")
        good = controller.policy.version
        client.patch(cm, "batchgate-policy", "batchgate-system",
                     {"data": {"policy.yaml": "faultTolerance:\n  retryLimit: -3\n"}})
        errors = lambda: controller.metrics.registry.get_sample_value(  # noqa: E731
            "batchgate_policy_errors_total", {"source": "configmap batchgate-system/batchgate-policy"}) or 0
        eventually(lambda: errors() >= 1, what="the invalid policy to be noticed")
        assert controller.policy.version == good
        event = eventually(lambda: [e for e in client.list(RESOURCES["Event"], "batchgate-system")["items"]
                                    if e["reason"] == "InvalidPolicy" and e["involvedObject"]["name"] == "batchgate-policy"
                                    and e["source"]["component"] == "batchgate-controller"], what="the Event")[0]
        assert "faultTolerance.retryLimit" in event["message"] and "kubectl edit configmap" in event["message"]
        assert f"the controller keeps policy {good}" in event["message"]
        # A ConfigMap without the key (here misspelled) is an invalid policy too, not the defaults.
        client.patch(cm, "batchgate-policy", "batchgate-system",
                     {"data": {"policy.yaml": None, "policy.yml": "queues:\n  defaultQueueName: other\n"}})
        eventually(lambda: errors() >= 2, what="the missing key to be noticed")
        assert controller.policy.version == good
    finally:  # the cluster-wide policy of every controller the session starts later: never left behind
        client.delete(cm, "batchgate-policy", "batchgate-system")
    eventually(lambda: controller.policy.queues.default_queue_name == "default-queue", what="the defaults again")
    # The admission loop takes the policy just after the controller does: a moment later.
    eventually(lambda: not controller.admission.state.fair_sharing.enable, what="fair sharing to switch off")
