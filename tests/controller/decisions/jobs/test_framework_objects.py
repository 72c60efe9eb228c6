"""The controller-made Service and MPI hostfile of a top-level framework Job, as a pure decision.

The Jobs are laid out by the gateway's own workload phase (the pure rules), so the decision reads
exactly the annotations a stored Job carries.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate import keys
from controller.decisions.jobs.framework_objects import (
    REASON_CONFLICT,
    Conflict,
    CreateObject,
    InvalidLayout,
    reconcile_framework_objects,
)
from tests.controller.builders import a_framework_job


def owner_ref(uid: str, kind: str = "Job", name: str = "train") -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


def existing_object(kind: str, name: str, owner_uid: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team-a"}
    if owner_uid is not None:
        meta["ownerReferences"] = [owner_ref(owner_uid)]
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def summary(actions: list[Any]) -> list[tuple[str, str, str]]:
    out = []
    for action in actions:
        if isinstance(action, CreateObject):
            out.append(("create", action.obj["kind"], action.obj["metadata"]["name"]))
        elif isinstance(action, Conflict):
            out.append(("warn", action.kind, action.name))
        else:
            out.append(("invalid", "", ""))
    return out


def with_owner(job: dict[str, Any], kind: str) -> dict[str, Any]:
    job["metadata"]["ownerReferences"] = [owner_ref("uid-owner", kind=kind, name="owner")]
    return job


def deleting(job: dict[str, Any]) -> dict[str, Any]:
    job["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return job


def without_framework_label(job: dict[str, Any]) -> dict[str, Any]:
    del job["metadata"]["labels"][keys.FRAMEWORK_LABEL]
    return job


CASES = [
    pytest.param(a_framework_job(), {}, [("create", "Service", "train")],
                 id="a new pytorch Job gets its headless Service"),
    pytest.param(a_framework_job("mpi", "mpi"), {}, [("create", "Service", "mpi"), ("create", "ConfigMap", "mpi-hostfile")],
                 id="a new MPI Job gets its Service and its hostfile ConfigMap"),
    pytest.param(a_framework_job("tf", "tensorflow", 2), {}, [("create", "Service", "tf")],
                 id="a tensorflow Job gets a Service and no hostfile"),
    pytest.param(a_framework_job(), {("Service", "train"): existing_object("Service", "train", "uid-train")}, [],
                 id="a Service the Job already owns is left as it is"),
    pytest.param(a_framework_job("mpi", "mpi", uid="uid-mpi"),
                 {("Service", "mpi"): existing_object("Service", "mpi", "uid-mpi")},
                 [("create", "ConfigMap", "mpi-hostfile")],
                 id="a deleted hostfile is made again while the Service stays"),
    pytest.param(a_framework_job(), {("Service", "train"): existing_object("Service", "train", None)},
                 [("warn", "Service", "train")],
                 id="a user's own Service of that name is not overwritten but warned about"),
    pytest.param(a_framework_job(), {("Service", "train"): existing_object("Service", "train", "uid-of-an-older-train")},
                 [("warn", "Service", "train")],
                 id="a Service owned by an earlier Job of the same name is not taken over"),
    pytest.param(a_framework_job(), {("ConfigMap", "train"): existing_object("ConfigMap", "train", None)},
                 [("create", "Service", "train")],
                 id="an object of another kind with the same name is no conflict"),
    pytest.param(with_owner(a_framework_job(), "AppWrapper"), {}, [],
                 id="a Job an AppWrapper owns gets nothing: its Service is an AppWrapper component"),
    pytest.param(with_owner(a_framework_job(), "JobSet"), {}, [],
                 id="a Job another controller owns gets nothing"),
    pytest.param(deleting(a_framework_job()), {}, [],
                 id="a Job being deleted gets nothing new"),
    pytest.param(without_framework_label(a_framework_job()), {}, [],
                 id="a Job without the framework label gets nothing even with a layout"),
    pytest.param({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plain", "uid": "u"},
                  "spec": {"template": {"spec": {}}}}, {}, [],
                 id="an ordinary Job gets nothing"),
]


@pytest.mark.parametrize("job,existing,expected", CASES)
def test_framework_objects_for_a_job(job: dict[str, Any], existing: dict[Any, Any], expected: list[Any]) -> None:
    assert summary(reconcile_framework_objects(job, existing)) == expected


def test_the_service_is_owned_by_the_job_and_selects_its_pods() -> None:
    job = a_framework_job()
    (action,) = reconcile_framework_objects(job, {})
    assert isinstance(action, CreateObject) and action.reason == "CreatedService"
    service = action.obj
    assert service["metadata"]["namespace"] == "team-a"
    assert service["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "uid-train", "controller": True,
         "blockOwnerDeletion": True}]
    assert service["metadata"]["labels"] == {keys.FRAMEWORK_LABEL: "pytorch"}
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    assert all(pod_labels.get(k) == v for k, v in service["spec"]["selector"].items())
    assert job["spec"]["template"]["spec"]["subdomain"] == service["metadata"]["name"]


def test_the_mpi_hostfile_lists_the_workers_with_their_slots() -> None:
    actions = reconcile_framework_objects(a_framework_job("mpi", "mpi", 3), {})
    hostfile = next(a.obj for a in actions if isinstance(a, CreateObject) and a.obj["kind"] == "ConfigMap")
    assert hostfile["data"] == {"hostfile": "mpi-1.mpi slots=1\nmpi-2.mpi slots=1\n"}
    assert hostfile["metadata"]["labels"] == {keys.FRAMEWORK_LABEL: "mpi"}


def test_a_conflict_is_a_warning_naming_the_object() -> None:
    (action,) = reconcile_framework_objects(a_framework_job(), {("Service", "train"): existing_object("Service", "train", None)})
    assert isinstance(action, Conflict) and action.reason == REASON_CONFLICT
    assert action.message.startswith("Service train exists and is not owned by this Job")


def test_a_malformed_layout_is_reported_not_guessed() -> None:
    job = a_framework_job()
    job["spec"]["template"]["metadata"]["annotations"][keys.FRAMEWORK_LAYOUT_ANNOTATION] = "{not json"
    (action,) = reconcile_framework_objects(job, {})
    assert isinstance(action, InvalidLayout)
    assert action.message.startswith(
        f"cannot make the framework Service: metadata.annotations[{keys.FRAMEWORK_LAYOUT_ANNOTATION}]: not valid JSON")


@given(present=st.sets(st.sampled_from([("Service", "mpi"), ("ConfigMap", "mpi-hostfile")])),
       foreign=st.sets(st.sampled_from([("Service", "mpi"), ("ConfigMap", "mpi-hostfile")])))
def test_each_wanted_object_gets_exactly_one_verdict_and_owned_ones_none(present: set[Any], foreign: set[Any]) -> None:
    """Whatever exists: a missing object is created, a foreign one warned about, an owned one left."""
    job = a_framework_job("mpi", "mpi", uid="uid-mpi")
    existing = {key: existing_object(key[0], key[1], None if key in foreign else "uid-mpi") for key in present}
    before = copy.deepcopy(existing)
    verdicts = summary(reconcile_framework_objects(job, existing))
    for key in [("Service", "mpi"), ("ConfigMap", "mpi-hostfile")]:
        expected = "create" if key not in present else "warn" if key in foreign else None
        assert [v[0] for v in verdicts if v[1:] == key] == ([expected] if expected else [])
    assert existing == before
