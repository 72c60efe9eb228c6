"""What the demo says admission changed: submitted object against stored object, and the
gateway's share of it: less what the same submission gets without the gateway."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from demo.changes import Change, admission_changes, gateway_changes, leaves, summarize

SUBMITTED: dict[str, Any] = {
    "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
    "metadata": {"name": "sample-job", "labels": {"team": "a"}},
    "spec": {"components": [{"template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}]},
}


def stored(**edits: Any) -> dict[str, Any]:
    obj = copy.deepcopy(SUBMITTED)
    obj["metadata"].update({"uid": "u-1", "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z",
                            "generation": 1, "namespace": "team-a", "managedFields": [{"manager": "kubectl"}],
                            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}})
    obj["status"] = {"phase": "Suspended"}
    for path, value in edits.items():
        target = obj
        *parents, last = path.split(".")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        target[last] = value
    return obj


@pytest.mark.parametrize(
    ("after", "summary"),
    [
        pytest.param(stored(), "unchanged", id="fields the API server always sets are not changes"),
        pytest.param(stored(**{"metadata.labels": {"team": "a", "workload.codeflare.dev/user": "alice"}}),
                     "workload.codeflare.dev/user=alice", id="an added label reads as its full key and value"),
        pytest.param(stored(**{"spec.suspend": True}), "suspend=true", id="a boolean reads as JSON"),
        pytest.param(stored(**{"spec.components.0.template.spec.template.spec.schedulerName": "s",
                               "spec.components.0.template.spec.template.metadata": {"labels": {"g": "x"}}}),
                     "schedulerName=s, g=x", id="fields deep inside a component template are found"),
        pytest.param(stored(**{"metadata.labels": {"team": "b"}}), "team=b", id="a changed value reads as its new value"),
        pytest.param(stored(**{"metadata.labels": {}}), "removed team", id="a removed label is named"),
    ],
)
def test_the_summary_names_what_admission_changed(after: dict[str, Any], summary: str) -> None:
    assert summarize(admission_changes(SUBMITTED, after)) == summary


def test_repeated_changes_are_counted_once_with_their_number() -> None:
    changes = [Change("/a/schedulerName", None, "s"), Change("/b/schedulerName", None, "s")]
    assert summarize(changes) == "schedulerName=s (x2)"


def test_a_label_key_with_a_slash_is_unescaped_from_the_json_pointer() -> None:
    [change] = admission_changes({"metadata": {}}, {"metadata": {"labels": {"a.io/b~c": "v"}}})
    assert (change.path, change.key) == ("/metadata/labels/a.io~1b~0c", "a.io/b~c")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
objects = st.dictionaries(st.sampled_from(["spec", "data", "kind"]), json_values, max_size=3)
quick = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@quick
@given(objects)
def test_an_object_compared_with_itself_has_no_changes(obj: dict[str, Any]) -> None:
    assert admission_changes(obj, copy.deepcopy(obj)) == []


@quick
@given(objects, objects)
def test_every_reported_change_is_a_leaf_that_really_differs(before: dict[str, Any], after: dict[str, Any]) -> None:
    old, new = dict(leaves(before)), dict(leaves(after))
    for change in admission_changes(before, after):
        if change.removed:
            assert change.path in old and change.path not in new
        else:
            assert new[change.path] == change.after and old.get(change.path, ...) != change.after


def test_the_gateways_changes_leave_out_what_the_api_server_does_alone() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}

    def defaulted(uid: str, **edits: Any) -> dict[str, Any]:
        obj = copy.deepcopy(job)
        obj["metadata"].update(uid=uid, labels={"controller-uid": uid, **edits.pop("labels", {})})
        obj["spec"].update(backoffLimit=6, suspend=edits.pop("suspend", False))
        obj["spec"]["template"]["spec"].update(schedulerName=edits.pop("schedulerName", "default-scheduler"))
        return obj

    ungated = defaulted("u-admin")
    gated = defaulted("u-alice", labels={"user": "alice"}, suspend=True, schedulerName="batchgate-scheduler")
    assert summarize(admission_changes(job, gated)) == (
        "controller-uid=u-alice, user=alice, schedulerName=batchgate-scheduler, backoffLimit=6, suspend=true")
    assert summarize(gateway_changes(job, gated, ungated)) == "user=alice, schedulerName=batchgate-scheduler, suspend=true"
    assert gateway_changes(job, ungated, copy.deepcopy(ungated)) == []
