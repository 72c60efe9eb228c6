"""Invariants over random topologies: ranks are a permutation, there is one master, nothing crashes."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate import keys
from tests.webhook.rules.frameworks.builders import (
    APPWRAPPER,
    JOB,
    POD,
    admit,
    admitted_pods,
    appwrapper,
    env_of,
    indexed_job,
    pods_of,
    pytorchjob,
)

worker_counts = st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=4)


@st.composite
def pytorch_workloads(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    shape = draw(st.sampled_from(["single indexed job", "master job and worker jobs", "a pytorchjob alone"]))
    if shape == "single indexed job":
        return indexed_job("t", draw(st.integers(min_value=2, max_value=40)), framework="pytorch"), JOB
    if shape == "a pytorchjob alone":
        return appwrapper("aw", pytorchjob("p", workers=draw(st.integers(min_value=1, max_value=5))),
                          framework="pytorch"), APPWRAPPER
    workers = [indexed_job(f"w{i}", n, role="worker") for i, n in enumerate(draw(worker_counts))]
    components = draw(st.permutations([indexed_job("m", 1, role="master")] + workers))
    return appwrapper("aw", *components, framework="pytorch"), APPWRAPPER


@settings(max_examples=60, deadline=None)
@given(pytorch_workloads())
def test_pytorch_ranks_are_a_permutation_and_there_is_exactly_one_master(case: tuple[dict[str, Any], Any]) -> None:
    workload, kind = case
    pods = admitted_pods(workload, kind)
    envs = [env_of(pod) for pod in pods.values()]
    world = len(pods)
    assert {env["WORLD_SIZE"] for env in envs} == {str(world)}
    assert sorted(int(env["RANK"]) for env in envs) == list(range(world))
    masters = {env["MASTER_ADDR"] for env in envs}
    assert len(masters) == 1
    rank0 = next(pod for pod in pods.values() if env_of(pod)["RANK"] == "0")
    assert masters == {f"{rank0['spec']['hostname']}.{rank0['spec']['subdomain']}"}
    assert {env["PET_NODE_RANK"] for env in envs} == {env["RANK"] for env in envs}


@settings(max_examples=40, deadline=None)
@given(
    ps=st.integers(min_value=0, max_value=3),
    workers=st.integers(min_value=1, max_value=5),
    chief=st.booleans(),
    evaluator=st.booleans(),
)
def test_every_tensorflow_pod_finds_its_own_address_under_its_task(ps: int, workers: int, chief: bool, evaluator: bool) -> None:
    roles = {"ps": ps, "worker": workers, "chief": int(chief), "evaluator": int(evaluator)}
    jobs = [indexed_job(f"tf-{role}", n, role=role) for role, n in roles.items() if n]
    pods = admitted_pods(appwrapper("tf", *jobs, framework="tensorflow"), APPWRAPPER)
    tasks = set()
    for pod in pods.values():
        if sum(roles.values()) == 1:
            assert env_of(pod) == {}
            continue
        config = json.loads(env_of(pod)["TF_CONFIG"])
        task = (config["task"]["type"], config["task"]["index"])
        tasks.add(task)
        own = f"{pod['spec']['hostname']}.{pod['spec']['subdomain']}:2222"
        assert config["cluster"][task[0]][task[1]] == own
        assert list(config["cluster"]) == [r for r in ("ps", "worker", "chief", "evaluator") if roles[r]]
    assert len(tasks) == (len(pods) if sum(roles.values()) > 1 else 0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**40), max_value=2**40) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)
arg_docs = st.dictionaries(
    st.sampled_from(["port", "nprocPerNode", "roles", "hostfilePath", "slotsPerHost", "waitTimeoutSeconds",
                     "waitImage", "x"]),
    json_values,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(framework=st.sampled_from(keys.FRAMEWORKS), args=arg_docs | st.text(max_size=20))
def test_any_framework_args_are_accepted_or_denied_by_field_never_crash(framework: str, args: Any) -> None:
    job = appwrapper("aw", indexed_job("a", 1), indexed_job("b", 2), framework=framework,
                     args=args if isinstance(args, str) else json.dumps(args))
    outcome = admit(job, APPWRAPPER)
    if outcome.error is not None:
        assert outcome.error.path.startswith(("metadata.annotations", "spec")), outcome.error


pod_metadata = st.fixed_dictionaries(
    {"labels": st.dictionaries(st.sampled_from([keys.JOB_COMPLETION_INDEX_LABEL, keys.KUBEFLOW_REPLICA_INDEX_LABEL]),
                               json_values, max_size=2),
     "annotations": st.dictionaries(
         st.sampled_from([keys.FRAMEWORK_LAYOUT_ANNOTATION, keys.HOST_PREFIX_ANNOTATION,
                          keys.JOB_COMPLETION_INDEX_ANNOTATION]),
         json_values | json_values.map(json.dumps), max_size=3)}
)


@settings(max_examples=150, deadline=None)
@given(meta=pod_metadata, spec=st.dictionaries(st.sampled_from(["containers", "hostname", "volumes"]), json_values))
def test_any_labelled_pod_is_either_laid_out_or_denied_never_crash(meta: dict[str, Any], spec: dict[str, Any]) -> None:
    meta["labels"][keys.FRAMEWORK_LABEL] = "pytorch"
    outcome = admit({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, POD)
    assert outcome.error is not None or outcome.changes


def real_pod(framework: str) -> dict[str, Any]:
    job = indexed_job("j", 3, framework=framework)
    assert admit(job, JOB).error is None
    return pods_of(job)[0]


containers = st.lists(
    st.fixed_dictionaries({"name": st.text(max_size=3)},
                          optional={"env": json_values, "volumeMounts": json_values}) | json_values,
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(
    framework=st.sampled_from(["pytorch", "mpi"]),
    spec=st.fixed_dictionaries({}, optional={"containers": containers, "initContainers": json_values,
                                             "volumes": json_values, "hostname": json_values,
                                             "subdomain": json_values}),
)
def test_a_laid_out_pod_with_any_spec_is_either_given_env_or_denied_never_crash(framework: str, spec: dict[str, Any]) -> None:
    pod = real_pod(framework)
    pod["spec"] = spec
    outcome = admit(pod, POD)
    assert outcome.error is not None or outcome.changes


job_specs = st.fixed_dictionaries(
    {},
    optional={
        "completions": st.integers(min_value=0, max_value=4) | json_values,
        "parallelism": st.integers(min_value=0, max_value=4) | json_values,
        "completionMode": st.sampled_from(["Indexed", "NonIndexed"]) | json_values,
        "template": st.fixed_dictionaries(
            {"spec": st.fixed_dictionaries({"containers": st.just([])},
                                           optional={"subdomain": st.just("sub") | json_values,
                                                     "hostname": json_values})},
            optional={"metadata": st.fixed_dictionaries(
                {}, optional={"labels": st.fixed_dictionaries({}, optional={keys.ROLE_LABEL: st.sampled_from(
                    ["worker", "master"]) | json_values})}) | json_values},
        ) | json_values,
    },
)


@settings(max_examples=200, deadline=None)
@given(
    framework=st.sampled_from(keys.FRAMEWORKS),
    name=st.sampled_from(["train", "train", "", "Bad_Name"]) | json_values,
    spec=job_specs,
    wrap=st.booleans(),
)
def test_any_labelled_workload_is_either_laid_out_or_denied_never_crash(
    framework: str, name: Any, spec: dict[str, Any], wrap: bool
) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}
    if wrap:
        workload = appwrapper("aw", job, indexed_job("b", 2, role="worker"), framework=framework)
        outcome = admit(workload, APPWRAPPER)
    else:
        job["metadata"]["labels"] = {keys.FRAMEWORK_LABEL: framework}
        outcome = admit(job, JOB)
    assert outcome.error is not None or outcome.changes


JUNK = (None, 5, -1, True, "x", "", [], {}, [1], {"a": 1})


def field_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value (map keys and list indexes), the root excluded."""
    children: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    paths = []
    for key, child in children:
        paths.append(path + (key,))
        paths += field_paths(child, path + (key,))
    return paths


def corrupted(obj: Any, path: tuple[Any, ...], junk: Any) -> Any:
    obj = copy.deepcopy(obj)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = copy.deepcopy(junk)
    return obj


def laid_out_mpi_pod() -> dict[str, Any]:
    pod = real_pod("mpi")
    pod["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v"}]
    pod["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    pod["spec"]["initContainers"] = [{"name": "i", "image": "i"}]
    return pod


WORKLOADS = {
    "an Indexed Job": (indexed_job("t", 3, framework="mpi", role="worker", args={"slotsPerHost": 2}), JOB),
    "an AppWrapper of Jobs": (appwrapper("aw", indexed_job("m", 1, role="master"), indexed_job("w", 2),
                                         framework="pytorch", args={"roles": {"worker": "worker"}}), APPWRAPPER),
    "an AppWrapper of a PyTorchJob": (appwrapper("ptj", pytorchjob("ptj", workers=2), framework="pytorch",
                                                 args={"nprocPerNode": "auto"}), APPWRAPPER),
    "an MPI pod": (laid_out_mpi_pod(), POD),
}


def test_every_field_of_a_valid_workload_or_pod_replaced_by_junk_is_denied_or_accepted_never_a_crash() -> None:
    tried = 0
    for name, (obj, kind) in WORKLOADS.items():
        for path in field_paths(obj):
            for junk in JUNK:
                try:
                    admit(corrupted(obj, path, junk), kind)
                except Exception as err:  # the point of the test: report which field crashed
                    raise AssertionError(f"{name}: {path} = {junk!r} raised {err!r}") from err
                tried += 1
    assert tried > 500


@settings(max_examples=40, deadline=None)
@given(workers=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=4),
       slots=st.integers(min_value=1, max_value=8))
def test_the_mpi_hostfile_lists_every_worker_once_and_never_the_launcher(workers: list[int], slots: int) -> None:
    jobs = [indexed_job(f"w{i}", n, role="worker") for i, n in enumerate(workers)]
    aw = appwrapper("hf", indexed_job("launch", 1, role="master"), *jobs, framework="mpi", args={"slotsPerHost": slots})
    pods = admitted_pods(aw, APPWRAPPER)
    (configmap,) = [c["template"] for c in aw["spec"]["components"] if c["template"]["kind"] == "ConfigMap"]
    lines = configmap["data"]["hostfile"].splitlines()
    workers_hosts = sorted(f"{h}.hf" for h in pods if h != "launch-0")
    assert sorted(line.split(" ")[0] for line in lines) == workers_hosts
    assert {line.split(" ")[1] for line in lines} == {f"slots={slots}"}
    waited = pods["launch-0"]["spec"]["initContainers"][0]["command"][2]
    assert all(host in waited for host in workers_hosts) and "launch-0.hf" not in waited
