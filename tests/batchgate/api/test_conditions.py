"""metav1.Condition reading and the one merge rule every status writer follows.

We test these aspects: a transition time moves only when a status flips, new types are appended and
existing ones keep their place, the last wanted entry of a type wins, and reading skips junk.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from batchgate.api.conditions import Condition, condition_of, is_true, merge, read_conditions, to_wire

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)
NOW = T0 + _dt.timedelta(minutes=5)
READY = Condition("Ready", "True", "Up", "", T0)


@pytest.mark.parametrize("current, wanted, expected", [
    pytest.param((READY,), (Condition("Ready", "True", "StillUp", "m"),),
                 (Condition("Ready", "True", "StillUp", "m", T0),),
                 id="the same status keeps its transition time and takes the new reason"),
    pytest.param((READY,), (Condition("Ready", "False", "Down"),), (Condition("Ready", "False", "Down", "", NOW),),
                 id="a flipped status is stamped now"),
    pytest.param((READY,), (Condition("Healthy", "True", "Ok"),), (READY, Condition("Healthy", "True", "Ok", "", NOW)),
                 id="a new type is appended after the existing ones"),
    pytest.param((Condition("Ready", "True", "Up"),), (Condition("Ready", "True", "Up"),),
                 (Condition("Ready", "True", "Up", "", NOW),), id="a condition that never had a time gets one"),
    pytest.param((READY,), (Condition("Ready", "False", "Down"), Condition("Ready", "True", "Back")),
                 (Condition("Ready", "True", "Back", "", T0),),
                 id="only the last wanted entry of a type is compared with the stored one"),
    pytest.param((READY,), (), (READY,), id="nothing wanted changes nothing"),
])
def test_merge(current: tuple[Condition, ...], wanted: tuple[Condition, ...], expected: tuple[Condition, ...]) -> None:
    assert merge(current, wanted, NOW) == expected


@pytest.mark.parametrize("wire, expected", [
    pytest.param([{"type": "Ready", "status": "True", "reason": "Up", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                 (READY,), id="a well-formed condition"),
    pytest.param([{"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}],
                 (Condition("Ready", "True"),), id="an unparsable time is left unset"),
    pytest.param(["text", {"status": "True"}, {"type": 3}], (), id="entries without a string type are skipped"),
    pytest.param("conditions", (), id="a value that is not a list reads as none"),
    pytest.param(None, (), id="no conditions"),
    pytest.param([{"type": "Ready", "status": "True", "observedGeneration": 4}],
                 (Condition("Ready", "True", observed_generation=4),), id="the observed generation is kept"),
    pytest.param([{"type": "Ready", "status": "True", "observedGeneration": True}],
                 (Condition("Ready", "True"),), id="an observed generation that is not a number is left unset"),
])
def test_read_conditions(wire: Any, expected: tuple[Condition, ...]) -> None:
    assert read_conditions(wire) == expected


def test_to_wire_round_trips() -> None:
    assert read_conditions([READY.to_wire()]) == (READY,)


def test_a_list_written_back_keeps_what_was_read() -> None:
    wire = [{"type": "Ready", "status": "True", "reason": "Up", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z",
             "observedGeneration": 2}]
    assert to_wire(read_conditions(wire)) == wire


@pytest.mark.parametrize("obj, ready, true", [
    pytest.param({"status": {"conditions": [READY.to_wire()]}}, READY, True, id="an object whose condition holds"),
    pytest.param({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, Condition("Ready", "False"), False,
                 id="an object whose condition is False"),
    pytest.param({"status": "broken"}, None, False, id="a status that is not a mapping has no conditions"),
    pytest.param(None, None, False, id="no object"),
])
def test_an_objects_condition(obj: Any, ready: Condition | None, true: bool) -> None:
    assert (condition_of(obj, "Ready"), is_true(obj, "Ready")) == (ready, true)
