"""The pure object cache: events, relists, assumptions and the label index."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.state.cache import ObjectCache, ObjectKey


def obj(name: str, rv: str, ns: str = "ns", metadata_uid: str | None = None,
        metadata_labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    more = {**({"uid": metadata_uid} if metadata_uid else {}), **({"labels": metadata_labels} if metadata_labels else {})}
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv, **more}, **extra}


def test_events_become_changes_and_replays_do_not() -> None:
    cache = ObjectCache()
    first = cache.apply("Job", "ADDED", obj("a", "1"))
    assert first is not None and (first.type, first.old) == ("ADDED", None)
    assert cache.apply("Job", "MODIFIED", obj("a", "1")) is None, "same version twice is no news"
    second = cache.apply("Job", "MODIFIED", obj("a", "2"))
    assert second is not None and second.type == "MODIFIED" and second.old["metadata"]["resourceVersion"] == "1"
    gone = cache.apply("Job", "DELETED", obj("a", "3"))
    assert gone is not None and gone.type == "DELETED" and cache.get("Job", "ns", "a") is None
    assert cache.apply("Job", "DELETED", obj("a", "3")) is None


def test_a_relist_reports_exactly_what_changed_while_we_were_away() -> None:
    cache = ObjectCache()
    cache.replace("Job", [obj("kept", "1"), obj("edited", "1"), obj("deleted", "1")])
    changes = cache.replace("Job", [obj("kept", "1"), obj("edited", "5"), obj("new", "6")])
    assert sorted((c.type, c.key.name) for c in changes) == [("ADDED", "new"), ("DELETED", "deleted"), ("MODIFIED", "edited")]
    assert sorted(o["metadata"]["name"] for o in cache.list("Job")) == ["edited", "kept", "new"]


@pytest.mark.parametrize("how", ["event", "relist", "assumed"])
def test_managed_fields_are_not_kept_and_nothing_else_is_lost(how: str) -> None:
    managed = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
    observed = obj("a", "7", metadata_uid="u1", metadata_labels={"team": "x"}, spec={"queueName": "q"})
    observed["metadata"]["managedFields"] = managed
    cache = ObjectCache()
    if how == "event":
        change = cache.apply("Workload", "ADDED", observed)
        assert change is not None and "managedFields" not in change.new["metadata"]
    elif how == "relist":
        change, = cache.replace("Workload", [observed])
        assert change.new is not None and "managedFields" not in change.new["metadata"]
    else:
        cache.assume("Workload", observed)
    stored = cache.get("Workload", "ns", "a")
    assert stored == obj("a", "7", metadata_uid="u1", metadata_labels={"team": "x"}, spec={"queueName": "q"})
    assert observed["metadata"]["managedFields"] == managed, "the caller's object is left as it was"


def test_an_assumption_shadows_the_observed_object_until_its_next_event() -> None:
    cache = ObjectCache()
    cache.apply("Workload", "ADDED", obj("w", "1"))
    cache.assume("Workload", obj("w", "1", status={"admission": {"clusterQueue": "cq"}}))
    assert cache.get("Workload", "ns", "w")["status"]["admission"]["clusterQueue"] == "cq"
    assert cache.snapshot(["Workload"])["Workload"][ObjectKey("Workload", "ns", "w")]["status"]
    cache.apply("Workload", "MODIFIED", obj("w", "2"))
    assert "status" not in cache.get("Workload", "ns", "w")


@pytest.mark.parametrize("events, assumed, expected", [
    pytest.param([("ADDED", "1"), ("DELETED", "3")], "2", None,
                 id="a write answered after the object's deletion was seen does not bring it back"),
    pytest.param([("ADDED", "1"), ("MODIFIED", "3")], "2", "3",
                 id="a write answered after a newer version was seen does not shadow that version"),
    pytest.param([("ADDED", "1")], "2", "2", id="a write newer than what was seen is assumed"),
])
def test_an_assumption_older_than_what_the_watch_already_showed_is_ignored(
        events: list[tuple[str, str]], assumed: str, expected: str | None) -> None:
    """A bind or create answered after the watch moved on must not leave a ghost in the cache."""
    cache = ObjectCache()
    for event_type, rv in events:
        cache.apply("Pod", event_type, obj("p", rv, metadata_uid="u1"))
    cache.assume("Pod", obj("p", assumed, metadata_uid="u1"))
    seen = cache.get("Pod", "ns", "p")
    assert (seen and seen["metadata"]["resourceVersion"]) == expected
    assert [o["metadata"]["resourceVersion"] for o in cache.list("Pod")] == ([expected] if expected else [])


def test_forget_drops_an_assumption_whose_write_failed() -> None:
    cache = ObjectCache()
    cache.assume("Workload", obj("w", "1"))
    assert [o["metadata"]["name"] for o in cache.list("Workload")] == ["w"]
    cache.forget(ObjectKey("Workload", "ns", "w"))
    assert cache.list("Workload") == []


def test_snapshots_are_read_only() -> None:
    cache = ObjectCache()
    cache.apply("Job", "ADDED", obj("a", "1"))
    view = cache.snapshot()
    with pytest.raises(TypeError):
        view["Job"][ObjectKey("Job", "ns", "b")] = {}  # type: ignore[index]


events = st.lists(st.tuples(st.sampled_from(["ADDED", "MODIFIED", "DELETED"]), st.sampled_from("abc"),
                            st.integers(1, 50)), max_size=30)


@given(history=events)
def test_after_any_history_a_relist_of_the_truth_converges(history: list[tuple[str, str, int]]) -> None:
    truth: dict[str, dict[str, Any]] = {}
    cache = ObjectCache()
    for index, (kind, name, _) in enumerate(history):
        o = obj(name, str(index))
        if kind == "DELETED":
            truth.pop(name, None)
        else:
            truth[name] = o
        if index % 3:  # some events are missed, as when a watch breaks
            cache.apply("Job", kind, o)
    cache.replace("Job", list(truth.values()))
    assert sorted(map(repr, cache.list("Job"))) == sorted(map(repr, truth.values()))


operations = st.lists(st.tuples(st.sampled_from(["ADDED", "MODIFIED", "DELETED", "assume", "forget", "relist", "ask"]),
                                st.sampled_from("abc"), st.sampled_from(["x", "y", None])), max_size=40)


@settings(max_examples=400)
@given(history=operations)
def test_the_label_index_always_agrees_with_a_scan(history: list[tuple[str, str, str | None]]) -> None:
    """Whatever mix of events, assumptions and relists, `labelled` returns what filtering `list` would."""
    cache = ObjectCache()
    for index, (operation, name, owner) in enumerate(history):
        o = obj(name, str(index + 1), metadata_labels={"owner": owner} if owner else {})
        if operation == "assume":
            cache.assume("Pod", o)
        elif operation == "forget":
            cache.forget(ObjectKey("Pod", "ns", name))
        elif operation == "relist":
            cache.replace("Pod", [o])
        elif operation == "ask":
            cache.labelled("Pod", "ns", "owner", "x")  # the index may be built at any point of the history
        else:
            cache.apply("Pod", operation, o)
    for owner in ("x", "y"):
        scanned = [p for p in cache.list("Pod") if p["metadata"].get("labels", {}).get("owner") == owner]
        assert sorted(map(repr, cache.labelled("Pod", "ns", "owner", owner))) == sorted(map(repr, scanned))
        assert cache.labelled("Pod", "other-ns", "owner", owner) == []
