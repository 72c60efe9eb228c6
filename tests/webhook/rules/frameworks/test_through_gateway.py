"""The framework phases through the gateway's own `mutate` and `validate`, as the API server calls them.

Each case walks the chain a cluster runs: the user's workload is admitted; the AppWrapper
controller creates its wrapped Jobs (admitted again, not laid out again); the Job controller or
the training operator creates each pod with generateName (admitted: the pod phase); `validate`
then sees every object as mutated. Bad framework input is denied by `mutate` itself.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.policy import DEFAULT_POLICY, parse_policy
from tests.builders import APPWRAPPER_CONTROLLER, JOB_CONTROLLER, a_request
from tests.upstream_corpus import corpus, upstream
from tests.webhook.rules.frameworks.builders import appwrapper, env_of, indexed_job, pods_of
from webhook.rules import mutate, validate
from webhook.rules.review import AdmissionRequest


def admitted(obj: dict[str, Any], policy: Any = DEFAULT_POLICY, user: str = "alice") -> dict[str, Any]:
    """Mutate then validate, as sent by `user`; the object as the API server would store it."""
    mutation = mutate(a_request(obj, namespace="team1", user=user), policy)
    assert mutation.denial is None, mutation.denial
    stored = mutation.object if mutation.object is not None else obj
    verdict = validate(a_request(stored, namespace="team1", user=user), policy)
    assert verdict.allowed, verdict.message
    assert verdict.warnings == ()
    return stored


MAKERS = {"Job": JOB_CONTROLLER, "PyTorchJob": "system:serviceaccount:kubeflow:training-operator"}
"""Who creates a pod owned by each kind: a pod is admitted as the controller that makes it (a
user's bare pod is not an allowed top-level kind)."""


def maker_of(pod: dict[str, Any]) -> str:
    return MAKERS[pod["metadata"]["ownerReferences"][0]["kind"]]


def queued(workload: dict[str, Any]) -> dict[str, Any]:
    """Top-level workloads need a LocalQueue (queues.requireQueueFor)."""
    workload["metadata"].setdefault("labels", {})[keys.QUEUE_NAME_LABEL] = "team1-queue"
    return workload


def wrapped_children(aw: dict[str, Any]) -> list[dict[str, Any]]:
    """What the AppWrapper controller creates: each component, owned by the AppWrapper."""
    children = []
    for component in aw["spec"]["components"]:
        child = copy.deepcopy(component["template"])
        child["metadata"]["namespace"] = "team1"
        child["metadata"]["ownerReferences"] = [{"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
                                                  "name": aw["metadata"]["name"], "uid": "aw-uid", "controller": True}]
        children.append(child)
    return children


def run_everything(workload: dict[str, Any], policy: Any = DEFAULT_POLICY) -> dict[str, dict[str, Any]]:
    """The whole chain; the admitted pods keyed by hostname."""
    stored = admitted(queued(workload), policy)
    makers = [stored]
    if stored["kind"] == "AppWrapper":
        makers = []
        for child in wrapped_children(stored):
            before = copy.deepcopy(child)
            child = admitted(child, policy, user=APPWRAPPER_CONTROLLER)
            if child["kind"] in ("Job", "PyTorchJob"):
                assert _templates_of(child) == _templates_of(before), "a wrapped Job is not laid out again"
                makers.append(child)
    pods = {}
    for maker in makers:
        for pod in pods_of(maker):
            pod = admitted(pod, policy, user=maker_of(pod))
            pods[pod["spec"]["hostname"]] = pod
    return pods


def _templates_of(obj: dict[str, Any]) -> Any:
    if obj["kind"] == "Job":
        return obj["spec"]["template"]["metadata"]
    return {t: r["template"]["metadata"] for t, r in obj["spec"]["pytorchReplicaSpecs"].items()}


def test_a_pytorch_appwrapper_with_a_master_and_three_workers_gets_section_2_6_env_end_to_end() -> None:
    aw = appwrapper("train", indexed_job("train-master", 1, role="master"), indexed_job("train-worker", 3),
                    framework="pytorch")
    pods = run_everything(aw)
    assert {host: (env_of(p)["MASTER_ADDR"], env_of(p)["WORLD_SIZE"], env_of(p)["RANK"]) for host, p in pods.items()} == {
        "train-master-0": ("train-master-0.train", "4", "0"),
        "train-worker-0": ("train-master-0.train", "4", "1"),
        "train-worker-1": ("train-master-0.train", "4", "2"),
        "train-worker-2": ("train-master-0.train", "4", "3"),
    }
    assert {p["spec"]["subdomain"] for p in pods.values()} == {"train"}
    assert {p["spec"]["schedulerName"] for p in pods.values()} == {"batchgate-scheduler"}



def pytorch_labelled(aw: dict[str, Any]) -> dict[str, Any]:
    """A corpus AppWrapper as a user in team1 marks it for the pytorch framework."""
    aw["metadata"]["labels"][keys.FRAMEWORK_LABEL] = "pytorch"
    aw["metadata"]["namespace"] = "team1"
    return aw


@upstream
def test_the_corpus_pytorchjob_appwrapper_with_the_framework_label_gets_env_per_replica() -> None:
    pods = run_everything(pytorch_labelled(corpus("appwrapper/wrapped-pytorch-job.yaml")))
    master = "pytorch-simple-master-0.sample-pytorch-job"
    assert {host: (env_of(p)["MASTER_ADDR"], env_of(p)["RANK"]) for host, p in pods.items()} == {
        "pytorch-simple-master-0": (master, "0"),
        "pytorch-simple-worker-0": (master, "1"),
        "pytorch-simple-worker-1": (master, "2"),
    }


def test_a_top_level_tensorflow_indexed_job_gets_tf_config_with_ports_from_the_policy() -> None:
    policy = parse_policy("frameworks:\n  tensorflow: {port: 3333}\n")
    pods = run_everything(indexed_job("tf", 2, framework="tensorflow"), policy)
    assert {host: json.loads(env_of(p)["TF_CONFIG"])["task"] for host, p in pods.items()} == {
        "tf-0": {"type": "worker", "index": 0},
        "tf-1": {"type": "worker", "index": 1},
    }
    assert json.loads(env_of(pods["tf-1"])["TF_CONFIG"])["cluster"] == {"worker": ["tf-0.tf:3333", "tf-1.tf:3333"]}


def test_an_mpi_indexed_job_takes_hostfile_and_wait_settings_from_the_policy() -> None:
    policy = parse_policy(
        "frameworks:\n  mpi: {hostfilePath: /opt/hosts, slotsPerHost: 4, waitImage: 'busybox:1.37', waitTimeout: 2m}\n"
    )
    pods = run_everything(indexed_job("mpi", 3, framework="mpi"), policy)
    launcher = pods["mpi-0"]["spec"]["initContainers"][0]
    assert launcher["image"] == "busybox:1.37" and "+ 120 ))" in launcher["command"][2]
    assert env_of(pods["mpi-2"]) == {"OMPI_MCA_orte_default_hostfile": "/opt/hosts"}


def request_for(obj: dict[str, Any]) -> AdmissionRequest:
    """A pod's request from the controller that makes it; anything else, alice's."""
    return a_request(obj, namespace="team1", user=maker_of(obj) if obj["kind"] == "Pod" else "alice")


def test_a_bad_framework_workload_is_denied_by_mutate_with_the_field() -> None:
    aw = appwrapper("aw", indexed_job("a", 1, role="master"), indexed_job("b", 1, role="master"),
                    indexed_job("c", 1), framework="pytorch")
    mutation = mutate(request_for(aw), DEFAULT_POLICY)
    assert (mutation.object, mutation.denial.allowed, mutation.denial.code) == (None, False, 403)
    assert mutation.denial.message == "InvalidFramework: spec: pytorch needs exactly one 'master' pod, found 2"


def test_a_controller_made_pod_without_an_index_is_denied() -> None:
    job = admitted(queued(indexed_job("j", 2, framework="pytorch")))
    pod = pods_of(job)[0]
    del pod["metadata"]["annotations"][keys.JOB_COMPLETION_INDEX_ANNOTATION]
    del pod["metadata"]["labels"][keys.JOB_COMPLETION_INDEX_LABEL]
    mutation = mutate(request_for(pod), DEFAULT_POLICY)
    assert (mutation.object, mutation.denial.reason) == (None, "InvalidFramework")
    assert "a framework pod needs its index" in mutation.denial.message


@pytest.mark.parametrize(
    "user_env, warning",
    [
        pytest.param({"RANK": "5"}, "container main keeps its own RANK (batchgate: 1)",
                     id="a pod whose own RANK differs keeps it with a warning"),
        pytest.param({"RANK": "1"}, None, id="a pod whose own RANK agrees needs no warning"),
    ],
)
def test_user_env_wins_with_a_warning(user_env: dict[str, str], warning: str | None) -> None:
    job = admitted(queued(indexed_job("j", 2, framework="pytorch")))
    pod = pods_of(job)[1]
    pod["spec"]["containers"][0]["env"] = [{"name": k, "value": v} for k, v in user_env.items()]
    mutation = mutate(request_for(pod), DEFAULT_POLICY)
    assert env_of(mutation.object)["RANK"] == user_env["RANK"]
    assert mutation.warnings == ((warning,) if warning else ())
    assert validate(request_for(mutation.object), DEFAULT_POLICY).allowed


def test_the_example_in_docs_frameworks_md_does_what_the_page_says() -> None:
    page = (Path(__file__).resolve().parents[4] / "docs" / "frameworks.md").read_text()
    example = yaml.safe_load(page.split("```yaml\n", 1)[1].split("```", 1)[0])
    pods = run_everything(example)
    assert {k: v for k, v in env_of(pods["train-worker-1"]).items() if not k.startswith("PET_")} == {
        "MASTER_ADDR": "train-master-0.train", "MASTER_PORT": "23456", "WORLD_SIZE": "4", "RANK": "2",
    }
    assert env_of(pods["train-worker-1"])["PET_NPROC_PER_NODE"] == "8"


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "mpi", "mxnet"])
def test_the_workload_phase_run_again_on_its_own_output_changes_nothing(framework: str) -> None:
    roles = {"pytorch": ("master", "worker"), "tensorflow": ("chief", "worker"), "mpi": ("master", "worker"),
             "mxnet": ("scheduler", "server", "worker")}[framework]
    aw = appwrapper("aw", *(indexed_job(f"aw-{r}", 1, role=r) for r in roles), framework=framework)
    first = admitted(queued(aw))
    second = mutate(a_request(copy.deepcopy(first), namespace="team1"), DEFAULT_POLICY)
    assert second.object in (None, first)


@upstream
def test_the_corpus_fsdp_pytorchjob_keeps_its_own_nproc_per_node_in_every_pods_env() -> None:
    pods = run_everything(pytorch_labelled(corpus("mlbatch/pytorch-training.yaml")))
    assert {host: (env_of(p)["PET_NPROC_PER_NODE"], env_of(p)["WORLD_SIZE"]) for host, p in pods.items()} == {
        "mnist-training-master-0": ("2", "2"),
        "mnist-training-worker-0": ("2", "2"),
    }
