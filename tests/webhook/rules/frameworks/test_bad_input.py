"""Bad input is a denial naming the field, never a guessed layout, a wrong rank or a traceback."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from tests.webhook.rules.frameworks.builders import (
    APPWRAPPER,
    JOB,
    POD,
    SETTINGS,
    admit,
    assert_denied,
    appwrapper,
    indexed_job,
    pods_of,
    pytorchjob,
)
from webhook.rules.frameworks import apply_frameworks
from webhook.rules.review import GroupVersionKind

ARGS = f"metadata.annotations[{keys.FRAMEWORK_ARGS_ANNOTATION}]"
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"template": {"spec": {"containers": []}}}}


def with_label(obj: dict[str, Any], framework: str = "pytorch") -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {}).setdefault("labels", {})[keys.FRAMEWORK_LABEL] = framework
    return obj


def with_nproc(job: dict[str, Any], nproc: str) -> dict[str, Any]:
    job["spec"]["nprocPerNode"] = nproc
    return job


def hostnamed(job: dict[str, Any]) -> dict[str, Any]:
    job["spec"]["template"]["spec"]["hostname"] = "fixed"
    return job


@pytest.mark.parametrize(
    "obj, kind, path, message",
    [
        pytest.param(with_label(DEPLOYMENT), GroupVersionKind("apps", "v1", "Deployment"),
                     f"metadata.labels[{keys.FRAMEWORK_LABEL}]", "not on a Deployment.apps",
                     id="a framework label on a Deployment is denied"),
        pytest.param(with_label({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                     GroupVersionKind("", "v1", "ConfigMap"), f"metadata.labels[{keys.FRAMEWORK_LABEL}]",
                     "not on a ConfigMap", id="a framework label on a kind with no pod templates is denied"),
        pytest.param(indexed_job("j", 2, framework="jax"), JOB, f"metadata.labels[{keys.FRAMEWORK_LABEL}]",
                     "must be one of pytorch, tensorflow, mpi, mxnet", id="an unknown framework is denied"),
        pytest.param(indexed_job("j", None, framework="pytorch"), JOB, "spec.completions",
                     "needs completions", id="an Indexed Job without completions is denied"),
        pytest.param(indexed_job("j", 4, framework="pytorch", parallelism="2"), JOB, "spec.parallelism",
                     "must be a non-negative integer, not '2'", id="a parallelism that is not a number is denied"),
        pytest.param(indexed_job("j", 1, framework="pytorch"), JOB, "spec",
                     "needs at least one 'worker' pod", id="a one-pod PyTorch job has zero workers and is denied"),
        pytest.param(indexed_job("Train_1", 2, framework="pytorch"), JOB, "metadata.name",
                     "cannot name the headless Service", id="a name that cannot be a Service name is denied"),
        pytest.param(indexed_job("j" * 62, 12, framework="pytorch"), JOB, "spec.template",
                     "not a DNS label", id="hostnames longer than 63 characters are denied"),
        pytest.param(hostnamed(indexed_job("j", 2, framework="pytorch")), JOB, "spec.template.spec.hostname",
                     "must be empty", id="a fixed hostname that every pod would share is denied"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="master"), indexed_job("b", 1, role="master"),
                                indexed_job("c", 2), framework="pytorch"),
                     APPWRAPPER, "spec", "exactly one 'master' pod, found 2", id="two masters are denied"),
        pytest.param(appwrapper("aw", indexed_job("a", 2, role="master"), indexed_job("c", 2), framework="pytorch"),
                     APPWRAPPER, "spec", "exactly one 'master' pod, found 2",
                     id="a master Job with two pods is two masters"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="master"), framework="mpi"),
                     APPWRAPPER, "spec", "needs at least one 'worker' pod", id="an MPI launcher with zero workers is denied"),
        pytest.param(appwrapper("aw", indexed_job("a", 1), indexed_job("b", 1), framework="mxnet"),
                     APPWRAPPER, "spec", "needs one 'scheduler' pod, found none",
                     id="MXNet without a scheduler is denied"),
        pytest.param(indexed_job("mx", 4, framework="mxnet"), JOB, "spec", "needs at least one 'server' pod, found none",
                     id="MXNet without a parameter server is denied"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="chief"), indexed_job("b", 1, role="chief"),
                                indexed_job("c", 1), framework="tensorflow"),
                     APPWRAPPER, "spec", "at most one 'chief' pod, found 2", id="two TensorFlow chiefs are denied"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="launcher"), indexed_job("b", 1), framework="pytorch"),
                     APPWRAPPER, f"spec.components[0].template.spec.template.metadata.labels[{keys.ROLE_LABEL}]",
                     "'launcher' is not a pytorch role; roles: master, worker",
                     id="a role the framework does not have is denied at its label"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="master"), indexed_job("b", 1), framework="pytorch",
                                args={"roles": {"master": "leader"}}),
                     APPWRAPPER, f"{ARGS}.roles.master", "no component has batchgate.dev/role: leader",
                     id="a role named in the args that no component has is denied"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="master"), indexed_job("b", 1), framework="pytorch",
                                args={"roles": {"launcher": "x"}}),
                     APPWRAPPER, f"{ARGS}.roles.launcher", "pytorch has no role 'launcher'",
                     id="a role the framework does not know is denied in the args"),
        pytest.param(appwrapper("aw", indexed_job("a", 1, role="master"), indexed_job("b", 1), framework="pytorch",
                                args={"roles": {"master": "worker"}}),
                     APPWRAPPER, f"{ARGS}.roles", "two roles are both called 'worker'",
                     id="two roles under one name are denied"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args={"prot": 1}), JOB, f"{ARGS}.prot",
                     "unknown key for pytorch; allowed: port, nprocPerNode, roles", id="an unknown args key is denied"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args={"port": 70000}), JOB, f"{ARGS}.port",
                     "must be an integer port 1..65535, not 70000", id="a port out of range is denied"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args={"port": "80"}), JOB, f"{ARGS}.port",
                     'not "80"', id="a port given as a string is denied"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args={"nprocPerNode": 0}), JOB, f"{ARGS}.nprocPerNode",
                     "must be a positive integer or one of auto, cpu, gpu", id="zero processes per pod are denied"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args={"nprocPerNode": "\u00b2"}), JOB,
                     f"{ARGS}.nprocPerNode", "must be a positive integer",
                     id="a superscript digit is not a process count"),
        pytest.param(appwrapper("aw", with_nproc(pytorchjob("p", workers=1), "2"), framework="pytorch",
                                args={"nprocPerNode": "4"}),
                     APPWRAPPER, f"{ARGS}.nprocPerNode",
                     "'4' contradicts spec.components[0].template.spec.nprocPerNode: '2'",
                     id="args that contradict the wrapped PyTorchJob's nprocPerNode are denied"),
        pytest.param(appwrapper("aw", with_nproc(pytorchjob("p", workers=1), "many"), framework="pytorch"),
                     APPWRAPPER, "spec.components[0].template.spec.nprocPerNode",
                     "must be a positive integer or one of auto, cpu, gpu",
                     id="a PyTorchJob's malformed nprocPerNode is denied at its field"),
        pytest.param(indexed_job("j", 2, framework="mpi", args={"hostfilePath": "etc/hosts"}), JOB,
                     f"{ARGS}.hostfilePath", "absolute file path", id="a relative hostfile path is denied"),
        pytest.param(indexed_job("j", 2, framework="mpi", args={"port": 22}), JOB, f"{ARGS}.port",
                     "unknown key for mpi", id="a port for MPI is an unknown key"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args="{port: 1}"), JOB, ARGS,
                     "not valid JSON", id="args that are not JSON are denied"),
        pytest.param(indexed_job("j", 2, framework="pytorch", args="[1]"), JOB, ARGS,
                     "must be a JSON object", id="args that are not an object are denied"),
        pytest.param(appwrapper("aw", DEPLOYMENT, framework="pytorch"), APPWRAPPER,
                     "spec.components[0].template.kind", "Deployment gives its pods no stable index",
                     id="a wrapped Deployment cannot carry a framework"),
        pytest.param(appwrapper("aw", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
                                framework="pytorch"),
                     APPWRAPPER, "spec.components", "needs a component with pods",
                     id="an AppWrapper whose components make no pods is denied"),
        pytest.param(appwrapper("aw", {"apiVersion": "v1", "kind": "Service",
                                       "metadata": {"name": "s", "labels": {keys.ROLE_LABEL: "master"}}},
                                indexed_job("b", 2), framework="pytorch"),
                     APPWRAPPER, f"spec.components[0].template.metadata.labels[{keys.ROLE_LABEL}]",
                     "a Service has no pods to play a role", id="a role on a component without pods is denied"),
        pytest.param(appwrapper("aw", indexed_job("x-worker", 1, role="worker"), pytorchjob("x", workers=1),
                                framework="pytorch"),
                     APPWRAPPER, "spec.components", "would both name their pods x-worker-<i>",
                     id="two templates whose pods would share names are denied"),
    ],
)
def test_bad_workloads_are_denied_with_the_field_path(obj: dict[str, Any], kind: Any, path: str, message: str) -> None:
    assert_denied(obj, kind, path, message)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="a Job without completionMode and parallelism"),
        pytest.param({"completionMode": "NonIndexed", "parallelism": 1},
                     id="a Job the API server defaulted to NonIndexed with parallelism 1"),
        pytest.param({"completionMode": "Indexed", "parallelism": 2}, id="a Job that would run half its ranks"),
    ],
)
def test_every_framework_job_becomes_indexed_with_all_its_ranks_at_once(spec: dict[str, Any]) -> None:
    job = indexed_job("j", 4, framework="pytorch", **spec)
    outcome = admit(job, JOB)
    assert outcome.error is None
    assert (job["spec"]["completionMode"], job["spec"]["parallelism"]) == ("Indexed", 4)
    assert [c for c in outcome.changes if "completionMode" in c or "parallelism" in c] == [
        f"spec.{field}: set to {value} for a framework job"
        for field, value in (("completionMode", "Indexed"), ("parallelism", 4))
        if spec.get(field) != value
    ]


def laid_out_pod(framework: str = "pytorch") -> dict[str, Any]:
    job = indexed_job("j", 3, framework=framework)
    assert admit(job, JOB).error is None
    return pods_of(job)[1]


def without_index(pod: dict[str, Any]) -> dict[str, Any]:
    del pod["metadata"]["annotations"][keys.JOB_COMPLETION_INDEX_ANNOTATION]
    del pod["metadata"]["labels"][keys.JOB_COMPLETION_INDEX_LABEL]
    return pod


def edited(pod: dict[str, Any], where: str, key: str, value: Any) -> dict[str, Any]:
    pod["metadata"][where][key] = value
    return pod


@pytest.mark.parametrize(
    "pod, path, message",
    [
        pytest.param(without_index(laid_out_pod()), "metadata", "a framework pod needs its index",
                     id="a pod whose index cannot be found is denied"),
        pytest.param(edited(laid_out_pod(), "annotations", keys.JOB_COMPLETION_INDEX_ANNOTATION, "one"),
                     f"metadata.annotations[{keys.JOB_COMPLETION_INDEX_ANNOTATION}]", "not 'one'",
                     id="a pod whose index is not a number is denied"),
        pytest.param(edited(laid_out_pod(), "annotations", keys.JOB_COMPLETION_INDEX_ANNOTATION, "\u00b2"),
                     f"metadata.annotations[{keys.JOB_COMPLETION_INDEX_ANNOTATION}]", "must be a non-negative integer",
                     id="a pod whose index is a superscript digit is denied"),
        pytest.param(edited(laid_out_pod(), "annotations", keys.JOB_COMPLETION_INDEX_ANNOTATION, "3"),
                     f"metadata.annotations[{keys.HOST_PREFIX_ANNOTATION}]", "the layout has no pod j-3",
                     id="a pod whose index is outside the layout is denied"),
        pytest.param(edited(laid_out_pod(), "annotations", keys.FRAMEWORK_LAYOUT_ANNOTATION, "{"),
                     f"metadata.annotations[{keys.FRAMEWORK_LAYOUT_ANNOTATION}]", "not valid JSON",
                     id="a pod with a corrupt layout is denied"),
        pytest.param(edited(laid_out_pod(), "annotations", keys.FRAMEWORK_LAYOUT_ANNOTATION, json.dumps({"slots": 1})),
                     f"metadata.annotations[{keys.FRAMEWORK_LAYOUT_ANNOTATION}]", "malformed layout",
                     id="a pod with a layout of the wrong shape is denied"),
        pytest.param(with_label({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"containers": [{"name": "c"}]}}),
                     f"metadata.annotations[{keys.FRAMEWORK_LAYOUT_ANNOTATION}]", "only for pods of an AppWrapper",
                     id="a hand-made pod with a framework label but no layout is denied"),
    ],
)
def test_bad_pods_are_denied_rather_than_given_a_wrong_rank(pod: dict[str, Any], path: str, message: str) -> None:
    before = copy.deepcopy(pod)
    outcome = admit(pod, POD)
    assert outcome.error is not None, outcome
    assert (outcome.error.path, message in outcome.error.message) == (path, True), outcome.error
    assert pod == before


def test_a_user_env_var_wins_and_is_named_in_a_warning() -> None:
    pod = laid_out_pod()
    pod["spec"]["containers"][0]["env"] = [{"name": "RANK", "value": "7"}, {"name": "MASTER_PORT", "value": "1"}]
    outcome = admit(pod, POD)
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert (env["RANK"], env["MASTER_PORT"], env["WORLD_SIZE"]) == ("7", "1", "3")
    assert outcome.warnings == ("container main keeps its own MASTER_PORT (batchgate: 23456), RANK (batchgate: 1)",)


def test_the_pod_phase_run_again_on_its_own_output_changes_and_warns_nothing() -> None:
    pod = laid_out_pod()
    admit(pod, POD)
    again = copy.deepcopy(pod)
    outcome = admit(again, POD)
    assert (again, outcome.warnings, outcome.error) == (pod, (), None)


@pytest.mark.parametrize(
    "obj, kind, operation",
    [
        pytest.param(indexed_job("j", 2, framework="pytorch"), JOB, "UPDATE", id="an update is left alone"),
        pytest.param(indexed_job("j", 2), JOB, "CREATE", id="a Job without the framework label is left alone"),
        pytest.param({"metadata": "nonsense"}, JOB, "CREATE", id="a malformed object is left to validation"),
    ],
)
def test_objects_the_phases_do_not_apply_to_are_untouched(obj: dict[str, Any], kind: Any, operation: str) -> None:
    before = copy.deepcopy(obj)
    assert apply_frameworks(obj, kind, operation, SETTINGS).changes == ()
    assert obj == before


def test_a_job_the_appwrapper_controller_creates_is_not_laid_out_again() -> None:
    aw = appwrapper("aw", indexed_job("a", 1, role="master"), indexed_job("b", 2), framework="pytorch")
    assert admit(aw, APPWRAPPER).error is None
    wrapped = copy.deepcopy(aw["spec"]["components"][1]["template"])
    wrapped["metadata"]["labels"] = {keys.FRAMEWORK_LABEL: "pytorch", keys.ROLE_LABEL: "worker"}
    wrapped["metadata"]["ownerReferences"] = [
        {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": "aw", "uid": "u", "controller": True}
    ]
    before = copy.deepcopy(wrapped)
    outcome = admit(wrapped, JOB, top_level=False)
    assert (outcome.changes, outcome.error) == ((), None)
    assert wrapped == before


def test_a_job_that_only_names_an_appwrapper_owner_is_laid_out_as_its_own() -> None:
    job = indexed_job("j", 2, framework="pytorch")
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": "aw", "uid": "u", "controller": True}
    ]
    outcome = admit(job, JOB)  # a user's request: the claimed owner changes nothing
    assert outcome.error is None and outcome.changes
