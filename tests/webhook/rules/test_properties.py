"""Invariants under Hypothesis: identity is never forgeable; the rules never raise."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jsonpatch
from hypothesis import given, settings, strategies as st

from batchgate.policy import DEFAULT_POLICY
from webhook.rules import mutate, validate
from webhook.rules.identity import sanitize_label_value
from webhook.rules.review import GroupVersionKind, Mutation, Verdict
from tests.builders import (
    a_job, a_jobset, a_pytorchjob, a_rayjob, a_request, an_appwrapper, pod_template,
)

USER = "workload.codeflare.dev/user"
USERID = "workload.codeflare.dev/userid"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=25,
)
names = st.text(min_size=0, max_size=80)


def workloads() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from([
        an_appwrapper("aw").with_job(replicas=2).build(),
        an_appwrapper("aw").with_pytorchjob(workers=2).with_component(a_jobset().build()).build(),
        an_appwrapper("aw").with_component({"apiVersion": "example.com/v1", "kind": "Custom",
                                            "spec": {"pods": [pod_template()]}},
                                           pod_sets=[{"path": "template.spec.pods[0]", "replicas": 2}]).build(),
        a_job("j").with_queue().build(),
        an_appwrapper("fw").labelled("batchgate.dev/framework", "pytorch").with_pytorchjob(workers=2).build(),
        a_job("mpi", parallelism=3, completions=3).with_queue().labelled("batchgate.dev/framework", "mpi")
        .with_spec(completionMode="Indexed").build(),
        a_pytorchjob("p").with_queue().build(),
        a_rayjob("r").with_queue().build(),
    ])


@settings(max_examples=200, deadline=None)
@given(workload=workloads(), username=names, uid=names, forged_user=names, forged_uid=names)
def test_identity_labels_are_never_forgeable(
    workload: dict[str, Any], username: str, uid: str, forged_user: str, forged_uid: str
) -> None:
    workload["metadata"]["labels"] = {**workload["metadata"].get("labels", {}), USER: forged_user, USERID: forged_uid}
    request = a_request(workload, user=username, uid=uid)
    mutation = mutate(request, DEFAULT_POLICY)
    stored = mutation.object if mutation.object is not None else workload
    assert stored["metadata"]["labels"][USER] == sanitize_label_value(username)
    assert stored["metadata"]["labels"][USERID] == sanitize_label_value(uid)
    verdict = validate(dataclasses.replace(request, object=stored), DEFAULT_POLICY)
    assert verdict.reason != "IdentityForged"


@settings(max_examples=200, deadline=None)
@given(workload=workloads(), forged_user=names, other_user=names)
def test_an_update_can_never_change_identity(workload: dict[str, Any], forged_user: str, other_user: str) -> None:
    stored = mutate(a_request(workload, user="alice"), DEFAULT_POLICY).object
    assert stored is not None
    updated = copy.deepcopy(stored)
    updated["metadata"]["labels"][USER] = forged_user
    verdict = validate(a_request(updated, user=other_user, operation="UPDATE", old=stored), DEFAULT_POLICY)
    if forged_user == stored["metadata"]["labels"][USER]:
        assert verdict.reason != "IdentityForged"
    else:
        assert (verdict.allowed, verdict.reason) == (False, "IdentityForged")


@settings(max_examples=150, deadline=None)
@given(workload=workloads(), username=names)
def test_mutation_is_idempotent_and_only_adds(workload: dict[str, Any], username: str) -> None:
    """The API server may call /mutate again (reinvocation): the second call changes nothing."""
    request = a_request(workload, user=username)
    first = mutate(request, DEFAULT_POLICY)
    assert first.object is not None
    ops = jsonpatch.make_patch(workload, first.object).patch
    assert {op["op"] for op in ops} <= {"add", "replace"}
    again = mutate(dataclasses.replace(request, object=first.object), DEFAULT_POLICY)
    assert again.changes == () and again.object is None


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, prefix + (i,)))
    return out


@st.composite
def damaged_workloads(draw: st.DrawFn) -> dict[str, Any]:
    """A real workload with one to three subtrees replaced by arbitrary JSON."""
    obj = copy.deepcopy(draw(workloads()))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(obj) if p]
        path = draw(st.sampled_from(paths))
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = draw(json_values)
    return obj


def _check_rules_answer(obj: Any, kind: GroupVersionKind, operation: str, old: Any,
                        namespace: str = "team-a") -> None:
    request = a_request(obj, kind=kind, operation=operation, old=old, namespace=namespace)
    mutation = mutate(request, DEFAULT_POLICY)
    assert isinstance(mutation, Mutation)
    if mutation.denial is not None:
        assert mutation.denial.code in (400, 403) and mutation.denial.reason and mutation.denial.message
    verdict = validate(request, DEFAULT_POLICY)
    assert isinstance(verdict, Verdict)
    assert verdict.allowed or (verdict.code in (400, 403) and verdict.reason and verdict.message)


KINDS = st.sampled_from([
    GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper"),
    GroupVersionKind("batch", "v1", "Job"),
    GroupVersionKind("kubeflow.org", "v1", "PyTorchJob"),
    GroupVersionKind("ray.io", "v1", "RayJob"),
    GroupVersionKind("", "v1", "ConfigMap"),
    GroupVersionKind("", "v1", "Pod"),
])


@settings(max_examples=300, deadline=None)
@given(obj=damaged_workloads(), operation=st.sampled_from(["CREATE", "UPDATE"]), old=workloads())
def test_rules_never_raise_on_damaged_workloads(obj: dict[str, Any], operation: str, old: dict[str, Any]) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    gvk = GroupVersionKind.from_api_version(api_version, kind) if isinstance(api_version, str) and isinstance(
        kind, str) else GroupVersionKind("batch", "v1", "Job")
    _check_rules_answer(obj, gvk, operation, old)


@settings(max_examples=200, deadline=None)
@given(obj=json_values, kind=KINDS, operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]),
       old=json_values)
def test_rules_never_raise_on_arbitrary_json(obj: Any, kind: GroupVersionKind, operation: str, old: Any) -> None:
    _check_rules_answer(obj, kind, operation, old)


@st.composite
def shaped_junk(draw: st.DrawFn) -> tuple[GroupVersionKind, dict[str, Any]]:
    """The right apiVersion/kind (so the rules get past the kind check) around arbitrary content."""
    kind = draw(KINDS)
    obj = {"apiVersion": kind.api_version, "kind": kind.kind,
           "metadata": draw(st.one_of(json_values, st.fixed_dictionaries(
               {"name": st.sampled_from(["batchgate-policy", "x"]), "labels": json_values,
                "annotations": json_values, "ownerReferences": json_values}))),
           "spec": draw(json_values), "data": draw(st.one_of(json_values, st.fixed_dictionaries(
               {"policy.yaml": st.one_of(json_values, st.text(alphabet="abc:{}[]- \n\t", max_size=40))})))}
    return kind, obj


@settings(max_examples=300, deadline=None)
@given(shaped=shaped_junk(), operation=st.sampled_from(["CREATE", "UPDATE"]), old=json_values)
def test_rules_never_raise_on_well_labelled_junk(
    shaped: tuple[GroupVersionKind, dict[str, Any]], operation: str, old: Any
) -> None:
    kind, obj = shaped
    for namespace in ("team-a", "batchgate-system"):  # the second holds the policy ConfigMap
        _check_rules_answer(obj, kind, operation, old, namespace)
        _check_rules_answer(obj, kind, operation, obj, namespace)
