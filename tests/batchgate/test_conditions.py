"""metav1.Condition reading and the one merge rule every status writer follows.

We test these aspects: a transition time moves only when a status flips, new types are appended and
existing ones keep their place, the last wanted entry of a type wins, and reading skips junk.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from batchgate.api.conditions import Condition, merge, read_conditions

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
])
def test_read_conditions(wire: Any, expected: tuple[Condition, ...]) -> None:
    assert read_conditions(wire) == expected


def test_to_wire_round_trips() -> None:
    assert read_conditions([READY.to_wire()]) == (READY,)
