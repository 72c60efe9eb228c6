"""Each registered kind's facts, Kueue's podSets, outcome and activity: one table per kind.

Adding a kind adds its rows here (docs/kinds.md)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate import kinds
from batchgate.api.errors import FieldError
from batchgate.api.paths import format_steps
from batchgate.kinds import APPWRAPPER, JOB, PYTORCHJOB, RAYCLUSTER, RAYJOB, Kind
from tests.builders import a_job, a_pytorchjob, a_raycluster, a_rayjob, an_appwrapper

FACTS = [
    # kind, Kind.group, REST path of one object, suspend path
    (JOB, "Job.batch", "/apis/batch/v1/namespaces/ns/jobs/x", "spec.suspend"),
    (PYTORCHJOB, "PyTorchJob.kubeflow.org", "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/x",
     "spec.runPolicy.suspend"),
    (RAYCLUSTER, "RayCluster.ray.io", "/apis/ray.io/v1/namespaces/ns/rayclusters/x", "spec.suspend"),
    (RAYJOB, "RayJob.ray.io", "/apis/ray.io/v1/namespaces/ns/rayjobs/x", "spec.suspend"),
    (APPWRAPPER, "AppWrapper.workload.codeflare.dev",
     "/apis/workload.codeflare.dev/v1beta2/namespaces/ns/appwrappers/x", "spec.suspend"),
]


@pytest.mark.parametrize("kind, qualified, path, suspend", FACTS, ids=lambda v: v.kind if isinstance(v, Kind) else "")
def test_a_queued_kinds_api_coordinates_and_suspend_switch(kind: Kind, qualified: str, path: str, suspend: str) -> None:
    assert (kind.qualified, kind.path("ns", "x"), format_steps(kind.suspend_path)) == (qualified, path, suspend)


def test_the_queued_kinds_are_exactly_those_in_the_table() -> None:
    assert set(kinds.QUEUED.values()) == {row[0] for row in FACTS}


def shape(kind: Kind, obj: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(ps.name, ps.replicas, format_steps(ps.location)) for ps in kind.workload_pod_sets(obj)]


@pytest.mark.parametrize(
    "kind, obj, expected",
    [
        pytest.param(JOB, a_job(parallelism=4, completions=2).build(), [("main", 2, "spec.template")],
                     id="a Job never runs more pods than completions"),
        pytest.param(PYTORCHJOB, a_pytorchjob(workers=3).build(),
                     [("master", 1, "spec.pytorchReplicaSpecs.Master.template"),
                      ("worker", 3, "spec.pytorchReplicaSpecs.Worker.template")],
                     id="a PyTorchJob's roles in rank order"),
        pytest.param(RAYCLUSTER, a_raycluster(workers=(2,), hosts=4).build(),
                     [("head", 1, "spec.headGroupSpec.template"), ("g0", 8, "spec.workerGroupSpecs[0].template")],
                     id="a RayCluster's multi-host group counts replicas times hosts"),
        pytest.param(RAYJOB, a_rayjob(workers=(3,)).build(),
                     [("head", 1, "spec.rayClusterSpec.headGroupSpec.template"),
                      ("g0", 3, "spec.rayClusterSpec.workerGroupSpecs[0].template"),
                      ("submitter", 1, "spec.submitterPodTemplate")],
                     id="a RayJob adds its submitter pod"),
        pytest.param(APPWRAPPER, an_appwrapper(name="aw").with_job(replicas=2).with_pytorchjob(workers=1).build(),
                     [("aw-0", 2, "spec.components[0].template.spec.template"),
                      ("aw-1", 1, "spec.components[1].template.spec.pytorchReplicaSpecs.Master.template"),
                      ("aw-2", 1, "spec.components[1].template.spec.pytorchReplicaSpecs.Worker.template")],
                     id="an AppWrapper numbers the podSets of all its components"),
    ],
)
def test_kueue_pod_sets(kind: Kind, obj: dict[str, Any], expected: list[tuple[str, int, str]]) -> None:
    assert shape(kind, obj) == expected


def with_status(obj: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**obj, "status": status}


def condition(type_: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": "True", "message": message}


@pytest.mark.parametrize(
    "kind, obj, outcome, active",
    [
        pytest.param(JOB, with_status(a_job().build(), active=2), None, True, id="a Job with active pods runs"),
        pytest.param(JOB, with_status(a_job().build(), conditions=[condition("Complete")]),
                     ("Succeeded", "Job finished successfully"), False, id="a complete Job succeeded"),
        pytest.param(PYTORCHJOB, with_status(a_pytorchjob().build(), replicaStatuses={"Worker": {"active": 1}}),
                     None, True, id="a PyTorchJob with an active replica runs"),
        pytest.param(PYTORCHJOB, with_status(a_pytorchjob().build(), conditions=[condition("Failed", "OOM")]),
                     ("Failed", "OOM"), False, id="a PyTorchJob's Failed condition is its outcome"),
        pytest.param(RAYCLUSTER, with_status(a_raycluster().build(), state="ready"), None, True,
                     id="a ready RayCluster runs and never finishes"),
        pytest.param(RAYJOB, with_status(a_rayjob().build(), jobDeploymentStatus="Complete"),
                     ("Succeeded", "RayJob deployment complete"), False, id="a complete RayJob succeeded"),
        pytest.param(RAYJOB, with_status(a_rayjob().build(), jobDeploymentStatus="Running"), None, True,
                     id="a running RayJob runs"),
        pytest.param(APPWRAPPER, with_status(an_appwrapper().build(), phase="Failed",
                                             conditions=[condition("ResourcesDeployed")]), None, False,
                     id="a failed AppWrapper still deleting its components is not finished"),
        pytest.param(APPWRAPPER, with_status(an_appwrapper().build(), phase="Running",
                                             conditions=[condition("QuotaReserved")]), None, True,
                     id="an AppWrapper holding quota runs"),
    ],
)
def test_outcome_and_activity(kind: Kind, obj: dict[str, Any], outcome: tuple[str, str] | None, active: bool) -> None:
    assert (kind.finished(obj), kind.active(obj)) == (outcome, active)


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["spec", "template", "replicas", "parallelism", "completions", "numOfHosts", "groupName",
                         "workerGroupSpecs", "headGroupSpec", "rayClusterSpec", "pytorchReplicaSpecs", "Master",
                         "components", "podSets", "path"]), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(kinds.ALL), spec=JUNK)
def test_a_lenient_read_never_raises_and_a_strict_one_agrees_when_it_succeeds(kind: Kind, spec: Any) -> None:
    obj = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "x"}, "spec": spec}
    lenient = kind.pod_sets(obj, "", kinds.LENIENT)
    try:
        strict = kind.pod_sets(obj, "", kinds.STRICT)
    except FieldError:
        return
    assert strict == lenient
