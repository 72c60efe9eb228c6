"""The controller under faults (issue 20), end to end: the shipped policy, the real gateway, the
real controller and kubectl on the local cluster.

- A partly finished gang never holds quota forever: an Indexed Job whose index 2 succeeded (and
  whose pod was deleted) is suspended and resumed; its gang is the 2 pods left, which run, and
  the Workload holds quota for 2 pods; a gang its Job can never complete is deactivated, reported,
  and its quota released.
- No escape from the queue: alice's one-patch escape is refused for every queued kind, and a job
  un-suspended without admission by someone the gateway lets through is suspended again.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from tests.e2e.stack import NAMESPACE, USER, Kubectl, Stack, submit
from tests.e2e.test_gang_shipped_policy import (  # noqa: F401  (module fixtures: the shipped stack, the controller)
    a_job, controller, get_json, pods_of, shipped,
)
from tests.e2e.test_gang_shipped_policy import wait as _wait

pytestmark = pytest.mark.timeout(240)
ESCAPE = json.dumps({"metadata": {"labels": {keys.QUEUE_NAME_LABEL: None}}, "spec": {"suspend": False}})


def wait(probe: Any, timeout: float, what: str) -> Any:
    """Wait as the shipped-policy tests do; on a timeout, say what the cluster looked like."""
    try:
        return _wait(probe, timeout, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{STATE.get('dump', lambda: '')()}") from None


STATE: dict[str, Any] = {}


def dump(kubectl: Kubectl, job: str) -> str:
    pods = [(p["metadata"]["name"], p["status"].get("phase"), p["spec"].get("nodeName"),
             p["metadata"].get("deletionTimestamp"), [c.get("message") for c in p["status"].get("conditions") or []
                                                      if c["type"] == "PodScheduled"]) for p in pods_of(kubectl, job)]
    group = kubectl("get", "podgroups.scheduling.x-k8s.io", job, "-n", NAMESPACE, "-o", "json", check=False).stdout
    return yaml.safe_dump({"pods": pods, "job": get_json(kubectl, "job", job).get("status"),
                           "jobspec": get_json(kubectl, "job", job)["spec"].get("suspend"),
                           "podgroup": json.loads(group or "{}").get("spec"),
                           "podgroupstatus": json.loads(group or "{}").get("status"),
                           "workload": workload_of(kubectl, "Job", job).get("status")})


def workload_of(kubectl: Kubectl, kind: str, name: str) -> dict[str, Any]:
    items = get_json(kubectl, "workloads.kueue.x-k8s.io")["items"]
    mine = [w for w in items if w["metadata"]["ownerReferences"][0]["kind"] == kind
            and w["metadata"]["ownerReferences"][0]["name"] == name]
    return mine[0] if mine else {}


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


def reserved_cpu(kubectl: Kubectl) -> str:
    cq = json.loads(kubectl("get", "clusterqueues.kueue.x-k8s.io", "cq", "-o", "json").stdout)
    for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
        for resource in flavor["resources"]:
            if resource["name"] == "cpu":
                return str(resource["total"])
    return "0"


def quiet(kubectl: Kubectl) -> None:
    wait(lambda: not [p for p in get_json(kubectl, "pods")["items"]
                      if p["status"].get("phase") not in ("Succeeded", "Failed")], 120, "a quiet cluster")


def indexed(name: str, *, pods: int) -> dict[str, Any]:
    job = a_job(name, pods=pods, gpus=1, run_for="6000s")
    job["spec"]["completionMode"] = "Indexed"
    return job


def test_a_partly_finished_gang_runs_the_pods_left_and_holds_quota_for_them(shipped: Stack, controller: Any) -> None:
    kubectl = shipped.kubectl
    quiet(kubectl)
    STATE["dump"] = lambda: dump(kubectl, "partly")
    submit(kubectl, indexed("partly", pods=3))
    wait(lambda: len([p for p in pods_of(kubectl, "partly") if p["status"].get("phase") == "Running"]) == 3, 90,
         "3 pods running")
    (index2,) = [p for p in pods_of(kubectl, "partly")
                 if p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "2"]
    name2 = index2["metadata"]["name"]
    # Index 2 finishes its work (its script now says: exit 0 after 1s), and its pod is deleted.
    kubectl("annotate", "pod", name2, "-n", NAMESPACE, "--overwrite",
            'localcluster.batchgate.dev/behavior={"runFor": "1s"}')
    wait(lambda: get_json(kubectl, "job", "partly")["status"].get("completedIndexes") == "2", 60, "index 2 completed")
    kubectl("delete", "pod", name2, "-n", NAMESPACE, "--wait=true", "--timeout=60s")
    before = {p["metadata"]["name"] for p in pods_of(kubectl, "partly")}
    kubectl("patch", "job", "partly", "-n", NAMESPACE, "--type=merge", "-p", '{"spec":{"suspend":true}}', user=USER)

    # Its pods go; the controller resumes it: the gang is the 2 pods left, and they run.
    wait(lambda: len([p for p in pods_of(kubectl, "partly") if p["status"].get("phase") == "Running"
                      and p["metadata"]["name"] not in before]) == 2, 90, "the 2 remaining pods running anew")
    group = json.loads(kubectl("get", "podgroups.scheduling.x-k8s.io", "partly", "-n", NAMESPACE, "-o", "json").stdout)
    assert group["spec"]["minMember"] == 2
    workload = workload_of(kubectl, "Job", "partly")
    assert workload["status"]["reclaimablePods"] == [{"name": "main", "count": 1}]
    wait(lambda: reserved_cpu(kubectl) == "2", 30, "the queue to show 2 cpu reserved: 1 per pod, for the 2 pods left")
    kubectl("delete", "job", "partly", "-n", NAMESPACE, "--wait=true", "--timeout=60s")


def test_a_gang_its_job_can_never_complete_is_reported_and_its_quota_released(shipped: Stack, controller: Any) -> None:
    kubectl = shipped.kubectl
    quiet(kubectl)
    podgroup = {"apiVersion": keys.PODGROUP_API_VERSION, "kind": "PodGroup",
                "metadata": {"name": "toobig", "namespace": NAMESPACE}, "spec": {"minMember": 5}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(podgroup), user=USER)
    submit(kubectl, a_job("toobig", pods=2, gpus=1, run_for="6000s"))

    def deactivated() -> bool:
        workload = workload_of(kubectl, "Job", "toobig")
        return (workload.get("spec", {}).get("active") is False
                and condition(workload, keys.COND_QUOTA_RESERVED).get("status") == "False")

    wait(deactivated, 90, "the workload deactivated and its quota released")
    workload = workload_of(kubectl, "Job", "toobig")
    evicted = condition(workload, keys.COND_EVICTED)
    assert (evicted["status"], evicted["reason"]) == ("True", "InactiveWorkload")
    assert "PodGroup team1/toobig needs 5 pods placed at once" in evicted["message"]
    assert "admission" not in workload["status"]
    assert get_json(kubectl, "job", "toobig")["spec"]["suspend"] is True
    wait(lambda: not pods_of(kubectl, "toobig"), 60, "its pods gone")
    described = kubectl("describe", "job", "toobig", "-n", NAMESPACE).stdout
    assert "GangNeverComplete" in described and "can never be complete" in described
    kubectl("delete", "job", "toobig", "-n", NAMESPACE, "--wait=true", "--timeout=60s")
    kubectl("delete", "podgroups.scheduling.x-k8s.io", "toobig", "-n", NAMESPACE)


@pytest.fixture(scope="module")
def queued_kinds(shipped: Stack) -> Iterator[list[tuple[str, str]]]:
    """One suspended, queued object of each kind, as alice applies them, in a queue that admits nothing."""
    from tests.builders import a_pytorchjob, a_raycluster, a_rayjob, an_appwrapper

    job = a_job("escape-job", pods=2, gpus=0, run_for="6000s")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = NOWHERE
    objects = [
        job,
        a_pytorchjob("escape-pt", namespace=NAMESPACE).with_queue(NOWHERE).build(),
        a_rayjob("escape-rj", namespace=NAMESPACE).with_queue(NOWHERE).build(),
        a_raycluster("escape-rc", namespace=NAMESPACE).with_queue(NOWHERE).build(),
        an_appwrapper("escape-aw", namespace=NAMESPACE).labelled(keys.QUEUE_NAME_LABEL, NOWHERE).with_job().build(),
    ]
    for obj in objects:
        submit(shipped.kubectl, obj)
    yield [(o["kind"], o["metadata"]["name"]) for o in objects]


NOWHERE = "nowhere"  # a LocalQueue that does not exist: its workloads wait forever
RESOURCE = {"Job": "jobs.batch", "PyTorchJob": "pytorchjobs.kubeflow.org", "RayJob": "rayjobs.ray.io",
            "RayCluster": "rayclusters.ray.io", "AppWrapper": "appwrappers.workload.codeflare.dev"}
SUSPEND = {"PyTorchJob": {"spec": {"runPolicy": {"suspend": False}}}}


@pytest.mark.parametrize("kind", list(RESOURCE))
def test_alices_escape_from_the_queue_is_refused(shipped: Stack, queued_kinds: list[tuple[str, str]],
                                                kind: str) -> None:
    name = dict(queued_kinds)[kind]
    patch = json.loads(ESCAPE)
    patch.update(SUSPEND.get(kind, {}))
    done = shipped.kubectl("patch", RESOURCE[kind], name, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch),
                           user=USER, check=False)
    assert done.returncode != 0
    assert "QueueNameImmutable" in done.stderr and "cannot change while the" in done.stderr, done.stderr
    unsuspend = json.dumps(SUSPEND.get(kind, {"spec": {"suspend": False}}))
    done = shipped.kubectl("patch", RESOURCE[kind], name, "-n", NAMESPACE, "--type=merge", "-p", unsuspend,
                           user=USER, check=False)
    assert done.returncode != 0 and "UnsuspendRefused" in done.stderr, done.stderr
    stored = get_json(shipped.kubectl, RESOURCE[kind], name)
    assert stored["metadata"]["labels"][keys.QUEUE_NAME_LABEL] == NOWHERE


def test_a_queued_job_running_without_admission_is_suspended_again(shipped: Stack, controller: Any) -> None:
    kubectl = shipped.kubectl
    submit(kubectl, a_job("no-room", pods=2, gpus=20, run_for="6000s"))  # 40 GPUs: more than the queue has
    wait(lambda: condition(workload_of(kubectl, "Job", "no-room"), keys.COND_QUOTA_RESERVED).get("reason") == "Pending",
         60, "the workload pending")
    # An exempt sender (the gateway lets the admin through) un-suspends it anyway.
    kubectl("patch", "job", "no-room", "-n", NAMESPACE, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    wait(lambda: get_json(kubectl, "job", "no-room")["spec"]["suspend"] is True, 30, "the job suspended again")
    described = kubectl("describe", "job", "no-room", "-n", NAMESPACE).stdout
    assert "Not admitted by cluster queue" in described
    wait(lambda: not [p for p in pods_of(kubectl, "no-room") if p["status"].get("phase") == "Running"], 60,
         "no pod of it running")
    kubectl("delete", "job", "no-room", "-n", NAMESPACE, "--wait=true", "--timeout=60s")
