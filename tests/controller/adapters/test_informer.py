"""Which changes a periodic relist finds are ones the watch should have delivered (the informer
counts and logs those: a watch that went silent or lost events)."""

from __future__ import annotations

import pytest

from controller.adapters.informer import delivered_by
from controller.state.cache import Change, ObjectKey


def change(type_: str, version: str | None) -> Change:
    obj = None if version is None else {"metadata": {"name": "x", "namespace": "t", "resourceVersion": version}}
    return Change(ObjectKey("ConfigMap", "t", "x"), type_, None, obj)


@pytest.mark.parametrize(("the_change", "watched", "missed"), [
    pytest.param(change("ADDED", "7"), "9", True, id="an object older than where the watch had come was missed"),
    pytest.param(change("MODIFIED", "9"), "9", True, id="one at the watch's own version was missed"),
    pytest.param(change("ADDED", "10"), "9", False, id="one made after the watch ended was not"),
    pytest.param(change("DELETED", None), "9", False, id="a deletion's version is unknown: nothing is claimed"),
    pytest.param(change("ADDED", "7"), None, False, id="without a watch version nothing is claimed"),
    pytest.param(change("ADDED", "abc"), "9", False, id="a version that is not a number claims nothing"),
])
def test_which_relist_changes_the_watch_should_have_delivered(the_change: Change, watched: str | None,
                                                              missed: bool) -> None:
    assert delivered_by(the_change, watched) is missed
