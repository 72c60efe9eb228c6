"""A PyTorchJob in a framework AppWrapper: its pods carry the training operator's rank env, so the
gateway accepts only layouts where those values are the layout's own (never a wrong rank), and
the preview never shows a value such a pod will not carry.

Pods are made by the local cluster's training-operator model (`new_pod`), env included, then go
through the real Pod phase.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate import keys
from localcluster.sim.pytorchjobs import new_pod, replica_specs
from tests.webhook.rules.frameworks.builders import (
    APPWRAPPER,
    POD,
    admit,
    assert_denied,
    appwrapper,
    env_of,
    indexed_job,
    pods_of,
    pytorchjob,
)
from webhook.rules.frameworks.preview import TRAINING_OPERATOR, workload_pod_previews

ARGS = f"metadata.annotations[{keys.FRAMEWORK_ARGS_ANNOTATION}]"
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "extra"}, "spec": {"ports": [{"port": 80}]}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "b"}}
SHARED = "would disagree on WORLD_SIZE and RANK"


def labelled(job: dict[str, Any], rtype: str, role: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    template = job["spec"]["pytorchReplicaSpecs"][rtype]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})[keys.ROLE_LABEL] = role
    return job


def object_labelled(job: dict[str, Any], role: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["metadata"]["labels"] = {keys.ROLE_LABEL: role}
    return job


@pytest.mark.parametrize(
    "obj, path, message",
    [
        pytest.param(appwrapper("aw", pytorchjob("p", workers=2), indexed_job("x", 2), framework="pytorch"),
                     "spec.components[1].template.kind", f"this Job and of the PyTorchJob at spec.components[0].template {SHARED}",
                     id="a PyTorchJob followed by a worker Job is denied at the Job"),
        pytest.param(appwrapper("aw", indexed_job("m", 1, role="master"), pytorchjob("p", masters=None, workers=2),
                                framework="pytorch"),
                     "spec.components[0].template.kind", "Make these pods Worker replicas of that PyTorchJob",
                     id="a master Job before a PyTorchJob of workers is denied at the Job"),
        pytest.param(appwrapper("aw", pytorchjob("p", workers=1), pytorchjob("q", masters=None, workers=1),
                                framework="pytorch"),
                     "spec.components[1].template.kind", f"this PyTorchJob and of the PyTorchJob at spec.components[0].template {SHARED}",
                     id="two PyTorchJobs are denied at the second"),
        pytest.param(appwrapper("aw", pytorchjob("p", workers=1), indexed_job("x", 1), framework="pytorch"),
                     "spec.components[1].template.kind", f"remove the label {keys.FRAMEWORK_LABEL}",
                     id="the denial says the operator can do it without the label"),
        pytest.param(appwrapper("aw", pytorchjob("p", workers=2), framework="tensorflow"),
                     "spec.components[0].template.kind", "PyTorch's env (MASTER_ADDR, WORLD_SIZE, RANK), not tensorflow's; wrap batch Jobs",
                     id="a PyTorchJob in a TensorFlow job is denied"),
        pytest.param(appwrapper("aw", pytorchjob("p", workers=2), framework="mpi"),
                     "spec.components[0].template.kind", "not mpi's",
                     id="a PyTorchJob in an MPI job is denied although its replica types match MPI's roles"),
        pytest.param(appwrapper("aw", indexed_job("s", 1, role="scheduler"), indexed_job("v", 1, role="server"),
                                pytorchjob("p", masters=None, workers=2), framework="mxnet"),
                     "spec.components[2].template.kind", "not mxnet's",
                     id="a PyTorchJob of workers in an MXNet job is denied"),
        pytest.param(appwrapper("aw", labelled(labelled(pytorchjob("p", workers=1), "Master", "worker"), "Worker", "master"),
                                framework="pytorch"),
                     "spec.components[0].template.spec.pytorchReplicaSpecs.Master.template"
                     f".metadata.labels[{keys.ROLE_LABEL}]",
                     "'worker' contradicts the replica type",
                     id="swapping a PyTorchJob's roles by label is denied"),
        pytest.param(appwrapper("aw", object_labelled(pytorchjob("p", workers=2), "master"), framework="pytorch"),
                     f"spec.components[0].template.metadata.labels[{keys.ROLE_LABEL}]",
                     "'master' contradicts the replica type",
                     id="a role label on the PyTorchJob object that its Workers inherit is denied"),
        pytest.param(appwrapper("aw", labelled(pytorchjob("p", masters=None, workers=1), "Worker", "master"),
                                framework="pytorch"),
                     "spec.components[0].template.spec.pytorchReplicaSpecs.Worker.template"
                     f".metadata.labels[{keys.ROLE_LABEL}]",
                     "contradicts the replica type",
                     id="a Worker labelled master in a PyTorchJob without a Master is denied"),
    ],
)
def test_a_pytorchjob_whose_operator_env_would_disagree_with_the_layout_is_denied(
        obj: dict[str, Any], path: str, message: str) -> None:
    assert_denied(obj, APPWRAPPER, path, message)


def operator_pods(ptj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods the training operator makes from a (laid-out) PyTorchJob, its env on them."""
    job = {**copy.deepcopy(ptj), "metadata": {**ptj["metadata"], "namespace": "team1", "uid": "u"}}
    return [new_pod(job, rtype, i) for rtype, spec in replica_specs(job).items() for i in range(int(spec["replicas"]))]


def admitted(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Lay out the AppWrapper, make every component's pods as its controller would, admit each one."""
    outcome = admit(workload, APPWRAPPER)
    assert outcome.error is None, outcome.error
    pods = []
    for component in workload["spec"]["components"]:
        template = component["template"]
        if template["kind"] == "PyTorchJob":
            pods += operator_pods(template)
        elif template["kind"] == "Job":
            pods += pods_of(template)
    for pod in pods:
        result = admit(pod, POD)
        assert result.error is None, result.error
    return {pod["spec"]["hostname"]: pod for pod in pods}


@pytest.mark.parametrize(
    "workload",
    [
        pytest.param(appwrapper("ptj", pytorchjob("ptj", workers=3), framework="pytorch"),
                     id="a PyTorchJob alone is accepted"),
        pytest.param(appwrapper("ptj", SERVICE, pytorchjob("ptj", workers=1), CONFIGMAP, framework="pytorch"),
                     id="a PyTorchJob with a Service and a ConfigMap, which have no pods, is accepted"),
        pytest.param(appwrapper("ptj", labelled(labelled(pytorchjob("ptj", workers=2), "Master", "master"),
                                                "Worker", "worker"), framework="pytorch"),
                     id="role labels that repeat the replica types are accepted"),
        pytest.param(appwrapper("ptj", labelled(pytorchjob("ptj", workers=2), "Master", "leader"),
                                framework="pytorch", args={"roles": {"master": "leader"}}),
                     id="a renamed role on the Master replica is accepted"),
    ],
)
def test_an_accepted_wrapped_pytorchjob_keeps_the_operators_env_and_batchgates_rank_agrees(
        workload: dict[str, Any]) -> None:
    pods = admitted(workload)
    for host, pod in pods.items():
        env = env_of(pod)
        names = [e["name"] for e in pod["spec"]["containers"][0]["env"]]
        assert len(names) == len(set(names)), f"{host} has a variable twice"
        assert env["MASTER_ADDR"] == "ptj-master-0"
        assert env["WORLD_SIZE"] == str(len(pods))
        assert pod["metadata"]["annotations"][keys.RANK_ANNOTATION] == env["RANK"]
    assert sorted(int(env_of(p)["RANK"]) for p in pods.values()) == list(range(len(pods)))


def test_the_preview_of_a_wrapped_pytorchjob_prints_only_what_its_pods_carry() -> None:
    workload = appwrapper("ptj", pytorchjob("ptj", workers=2), framework="pytorch")
    pods = admitted(workload)
    rows = workload_pod_previews(workload)
    assert [(r["hostname"], r["rank"], r["env"], r["envSetBy"]) for r in rows] == [
        ("ptj-master-0", 0, {}, TRAINING_OPERATOR),
        ("ptj-worker-0", 1, {}, TRAINING_OPERATOR),
        ("ptj-worker-1", 2, {}, TRAINING_OPERATOR),
    ]
    for row in rows:
        pod = pods[row["hostname"]]
        assert f"{pod['spec']['hostname']}.{pod['spec']['subdomain']}" == row["host"]
        assert pod["metadata"]["annotations"][keys.RANK_ANNOTATION] == env_of(pod)["RANK"] == str(row["rank"])


@st.composite
def pytorch_appwrappers(draw: st.DrawFn) -> dict[str, Any]:
    """A PyTorchJob, maybe with role labels, among other pod-bearing components and objects without pods."""
    ptj = pytorchjob("p", masters=draw(st.sampled_from([None, 1])), workers=draw(st.integers(min_value=1, max_value=4)))
    for rtype in ptj["spec"]["pytorchReplicaSpecs"]:
        role = draw(st.sampled_from([None, "master", "worker"]))
        if role is not None:
            ptj = labelled(ptj, rtype, role)
    others = [indexed_job(f"j{i}", n, role=draw(st.sampled_from([None, "master", "worker"])))
              for i, n in enumerate(draw(st.lists(st.integers(min_value=1, max_value=3), max_size=2)))]
    if draw(st.booleans()):
        others.append(pytorchjob("q", masters=None, workers=draw(st.integers(min_value=1, max_value=2))))
    components = draw(st.permutations([ptj, *others, *draw(st.lists(st.sampled_from([SERVICE, CONFIGMAP]),
                                                                     max_size=2, unique_by=lambda o: o["kind"]))]))
    return appwrapper("aw", *components, framework="pytorch")


@settings(max_examples=80, deadline=None)
@given(pytorch_appwrappers())
def test_with_a_pytorchjob_in_it_a_pytorch_appwrapper_is_denied_or_every_pod_agrees_on_its_rank(
        workload: dict[str, Any]) -> None:
    if admit(copy.deepcopy(workload), APPWRAPPER).error is not None:
        return
    pods = admitted(workload)
    envs = [env_of(pod) for pod in pods.values()]
    assert {e["WORLD_SIZE"] for e in envs} == {str(len(pods))}
    assert len({e["MASTER_ADDR"] for e in envs}) == 1
    assert sorted(int(e["RANK"]) for e in envs) == list(range(len(pods)))
    assert all(p["metadata"]["annotations"][keys.RANK_ANNOTATION] == env_of(p)["RANK"] for p in pods.values())
    assert {row["rank"]: row["hostname"] for row in workload_pod_previews(workload)} == {
        int(env_of(p)["RANK"]): host for host, p in pods.items()}


@pytest.mark.parametrize(
    "workload, expected",
    [
        pytest.param(appwrapper("ptj", pytorchjob("ptj", workers=1), framework="pytorch"), [],
                     id="an operator-made pod is told it got no env from batchgate"),
        pytest.param(appwrapper("aw", indexed_job("m", 1, role="master"), indexed_job("w", 1), framework="pytorch"),
                     ["env MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, PET_MASTER_ADDR, PET_MASTER_PORT, "
                      "PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE added"],
                     id="a Job's pod is told every variable batchgate added"),
    ],
)
def test_the_pod_phase_reports_only_the_env_it_added(workload: dict[str, Any], expected: list[str]) -> None:
    assert admit(workload, APPWRAPPER).error is None
    template = workload["spec"]["components"][0]["template"]
    pod = operator_pods(template)[0] if template["kind"] == "PyTorchJob" else pods_of(template)[0]
    outcome = admit(pod, POD)
    assert outcome.error is None, outcome.error
    assert [c for c in outcome.changes if c.startswith("env ")] == expected
