"""The AppWrapper state the lifecycle reads, parsed once and tolerant of a malformed status.

We test these aspects: every field is read from its wire place, a status written from the typed
values reads back the same, and junk in any status field reads as absent instead of failing.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.api.appwrapper import DeclaredPodSet
from batchgate.api.appwrapper_status import AppWrapperState, ComponentStatus, read_appwrapper_state
from batchgate.api.conditions import Condition

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)
DEPLOYED = Condition(keys.COND_RESOURCES_DEPLOYED, "True", "Created", "", T0)
WIRE: dict[str, Any] = {
    "apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
    "metadata": {"name": "aw", "namespace": "team-a", "uid": "u1", "finalizers": [keys.APPWRAPPER_FINALIZER],
                 "annotations": {"a": "b"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"suspend": True, "managedBy": "someone-else", "components": []},
    "status": {"phase": "Running", "resettingCount": 2, "conditions": [DEPLOYED.to_wire()],
               "componentStatus": [{"name": "job", "kind": "Job", "apiVersion": "batch/v1",
                                    "podSets": [{"path": "template.spec.template", "replicas": 3}, {"path": "template"}],
                                    "conditions": [DEPLOYED.to_wire()]}]},
}


def test_every_field_is_read_from_its_wire_place() -> None:
    job = ComponentStatus("job", "Job", "batch/v1",
                          (DeclaredPodSet("template.spec.template", 3), DeclaredPodSet("template")), (DEPLOYED,))
    assert read_appwrapper_state(WIRE) == AppWrapperState(
        "aw", "team-a", "u1", suspend=True, managed_by="someone-else", deleting=True,
        finalizers=(keys.APPWRAPPER_FINALIZER,), annotations={"a": "b"}, phase="Running", resetting_count=2,
        conditions=(DEPLOYED,), components=(job,))


def test_derived_values() -> None:
    aw = read_appwrapper_state(WIRE)
    assert (aw.finalized, aw.expected_pods, aw.component_name(0), aw.component_name(5)) == (True, 4, "job", "")
    assert aw.since(keys.COND_RESOURCES_DEPLOYED, "True", T0 + _dt.timedelta(hours=1)) == T0
    later = T0 + _dt.timedelta(hours=1)
    assert aw.since(keys.COND_RESOURCES_DEPLOYED, "False", later) == later, "a status not held yet starts now"
    assert aw.components[0].deployed == "True"


def test_a_component_status_written_from_the_model_reads_back_the_same() -> None:
    component = read_appwrapper_state(WIRE).components[0]
    assert read_appwrapper_state({"status": {"componentStatus": [component.to_wire()]}}).components == (component,)


def test_with_deployed_moves_the_condition_last_and_stamps_only_a_flip() -> None:
    other = Condition("Other", "True", "x", "", T0)
    component = ComponentStatus("job", "Job", "batch/v1", conditions=(DEPLOYED, other))
    later = T0 + _dt.timedelta(minutes=1)
    same = component.with_deployed("True", "Again", later, name="job-x")
    assert (same.name, same.conditions) == ("job-x", (other, Condition(keys.COND_RESOURCES_DEPLOYED, "True", "Again", "", T0)))
    flipped = component.with_deployed("False", "Deleted", later)
    assert flipped.conditions[-1] == Condition(keys.COND_RESOURCES_DEPLOYED, "False", "Deleted", "", later)


def test_an_object_with_nothing_reads_as_a_new_appwrapper() -> None:
    assert read_appwrapper_state({}) == AppWrapperState("", "", phase=keys.PHASE_EMPTY)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                           max_leaves=10)


@settings(max_examples=300)
@given(place=st.sampled_from([("metadata",), ("metadata", "finalizers"), ("metadata", "annotations"), ("spec",),
                              ("status",), ("status", "conditions"), ("status", "componentStatus"),
                              ("status", "resettingCount"), ("status", "phase")]),
       value=json_values)
def test_junk_in_any_field_never_stops_the_reader(place: tuple[str, ...], value: Any) -> None:
    wire: dict[str, Any] = {"metadata": {}, "spec": {}, "status": {}}
    target = wire
    for key in place[:-1]:
        target = target[key]
    target[place[-1]] = value
    read_appwrapper_state(wire)
