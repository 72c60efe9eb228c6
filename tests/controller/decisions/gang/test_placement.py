"""All-or-nothing gang placement: who gets bound where, who waits and why, in which order."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import Any, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate.api.node import Node
from controller.decisions.gang.placement import Bind, GroupSpec, Unschedulable, place
from controller.decisions.gang.node_fit import PodInfo, free_of, node_reason
from tests.controller.decisions.gang_builders import SCHEDULER, a_node, a_pod, gang

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)


def spec(min_member: int, minutes: int = 0) -> GroupSpec:
    return GroupSpec(min_member, T0 + _dt.timedelta(minutes=minutes))


def outcome(decisions: Sequence[Bind | Unschedulable]) -> dict[str, str]:
    """pod name -> node name, or "-" for a pod left Pending."""
    out = {}
    for d in decisions:
        if isinstance(d, Bind):
            out[d.pod.name] = d.node
        else:
            out.update({p.name: "-" for p in d.pods})
    return out


NODES = [a_node("n1"), a_node("n2")]


@pytest.mark.parametrize(("pods", "groups", "nodes", "expected"), [
    pytest.param(gang("g", 3, gpus=4), {("team-a", "g"): spec(3)}, NODES,
                 {"g-0": "n1", "g-1": "n1", "g-2": "n2"}, id="a gang that fits is bound whole, packed node by node"),
    pytest.param(gang("g", 5, gpus=4), {("team-a", "g"): spec(5)}, NODES,
                 {f"g-{i}": "-" for i in range(5)}, id="a gang one pod too big for the cluster binds nothing"),
    pytest.param(gang("g", 2, gpus=1), {("team-a", "g"): spec(3)}, NODES,
                 {"g-0": "-", "g-1": "-"}, id="a gang with fewer pods than minMember waits for its siblings"),
    pytest.param(gang("g", 2, gpus=1), {}, NODES, {"g-0": "-", "g-1": "-"},
                 id="a gang whose PodGroup does not exist waits"),
    pytest.param([a_pod("g-0", group="g", gpus=8, node="n1", phase="Running"),
                  a_pod("g-1", group="g", gpus=8, node="n2", phase="Running"), a_pod("g-2", group="g", gpus=8)],
                 {("team-a", "g"): spec(3)}, [*NODES, a_node("n3")],
                 {"g-2": "n3"}, id="pods already bound count towards minMember"),
    pytest.param([a_pod("done", group="g", phase="Succeeded", node="n1"), *gang("g", 1, gpus=8)],
                 {("team-a", "g"): spec(2)}, NODES, {"g-0": "n1"}, id="a member that succeeded counts as placed"),
    pytest.param([*gang("g", 3, gpus=8)], {("team-a", "g"): spec(2)}, NODES,
                 {"g-0": "n1", "g-1": "n2", "g-2": "-"}, id="pods beyond minMember that do not fit wait alone"),
    pytest.param([a_pod("lone", gpus=2), a_pod("big", gpus=9)], {}, NODES, {"lone": "n1", "big": "-"},
                 id="pods without a group are placed one by one"),
    pytest.param([a_pod("x", gpus=1, node="n2", phase="Running"), a_pod("p", gpus=1)], {}, NODES,
                 {"p": "n2"}, id="a GPU pod goes to the node whose GPUs are already busiest"),
    pytest.param([a_pod("x", gpus=8, node="n1", phase="Succeeded"), a_pod("p", gpus=8)], {}, NODES,
                 {"p": "n1"}, id="finished pods no longer hold their node"),
    pytest.param([a_pod("p", gpus=1, scheduler="default-scheduler")], {}, NODES, {},
                 id="pods for another scheduler are not ours to place"),
    pytest.param([a_pod("p", gpus=1, node="n1", phase="Running")], {}, NODES, {}, id="bound pods are not placed again"),
    pytest.param([*gang("g", 2, gpus=4, node_selector={"zone": "b"})], {("team-a", "g"): spec(2)},
                 [a_node("n1", labels={"zone": "a"}), a_node("n2", labels={"zone": "b"})],
                 {"g-0": "n2", "g-1": "n2"}, id="a gang follows its nodeSelector"),
])
def test_placement(pods: list[PodInfo], groups: dict[Any, GroupSpec], nodes: list[Node],
                   expected: dict[str, str]) -> None:
    assert outcome(place(pods, nodes, groups, SCHEDULER)) == expected


@pytest.mark.parametrize(("pods", "groups", "message"), [
    pytest.param(gang("g", 5, gpus=4), {("team-a", "g"): spec(5)},
                 "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
                 "PodGroup team-a/g needs 5 pods placed at once; only 4 fit.",
                 id="a gang too big hears kube-scheduler's reason and how far it got"),
    pytest.param(gang("g", 2, gpus=1), {("team-a", "g"): spec(3)},
                 "pre-filter pod g-0 cannot find enough sibling pods, current pods number: 2, minMember of group: 3",
                 id="a gang short of siblings hears coscheduling's PreFilter wording"),
    pytest.param(gang("g", 1, gpus=1), {}, "PodGroup team-a/g not found", id="a gang without PodGroup is told so"),
    pytest.param([a_pod("g-0", group="g", phase="Failed", node="n1"), *gang("g", 1, gpus=1)], {("team-a", "g"): spec(2)},
                 "PodGroup team-a/g needs 2 pods placed at once; pods waiting for a node: 1.",
                 id="a gang whose failed member is not replaced cannot be completed and says so"),
    pytest.param([a_pod("p", gpus=1, node_selector={"zone": "z"})], {},
                 "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
                 id="a lone pod hears the plain histogram"),
])
def test_unschedulable_messages(pods: list[PodInfo], groups: dict[Any, GroupSpec], message: str) -> None:
    decisions = place(pods, NODES, groups, SCHEDULER)
    assert [d.message for d in decisions if isinstance(d, Unschedulable)] == [message]


@pytest.mark.parametrize(("first", "second", "winner"), [
    pytest.param({"priority": 10}, {}, "a", id="the higher priority gang goes first"),
    pytest.param({}, {"priority": 10}, "b", id="priority beats an earlier PodGroup"),
    pytest.param({"minutes": 5}, {}, "b", id="at equal priority the earlier PodGroup goes first"),
])
def test_queue_order_decides_which_gang_gets_the_last_node(first: dict[str, int], second: dict[str, int],
                                                           winner: str) -> None:
    pods = [*gang("a", 2, gpus=8, priority=first.get("priority", 0)),
            *gang("b", 2, gpus=8, priority=second.get("priority", 0))]
    groups = {("team-a", "a"): spec(2, first.get("minutes", 1)), ("team-a", "b"): spec(2, second.get("minutes", 1))}
    placed = {d.pod.group for d in place(pods, NODES, groups, SCHEDULER) if isinstance(d, Bind)}
    assert placed == {winner}


def test_a_gang_that_failed_leaves_its_trial_capacity_to_the_next_one() -> None:
    pods = [*gang("big", 3, gpus=8), *gang("small", 2, gpus=8)]
    groups = {("team-a", "big"): spec(3, 0), ("team-a", "small"): spec(2, 1)}
    assert outcome(place(pods, NODES, groups, SCHEDULER)) == {
        "big-0": "-", "big-1": "-", "big-2": "-", "small-0": "n1", "small-1": "n2"}


def test_a_thousand_pod_gang_fits_exactly_on_a_thousand_nodes() -> None:
    nodes = [a_node(f"n{i:04d}") for i in range(1000)]
    decisions = place(gang("g", 1000, gpus=8), nodes, {("team-a", "g"): spec(1000)}, SCHEDULER)
    assert sorted(d.node for d in decisions if isinstance(d, Bind)) == [n.name for n in nodes]


# --- invariants ---------------------------------------------------------------------------------

@st.composite
def workloads(draw: Any) -> tuple[list[Node], list[PodInfo], dict[Any, GroupSpec]]:
    count = draw(st.integers(1, 6))
    nodes = [a_node(f"n{i}", gpus=draw(st.sampled_from([0, 2, 4, 8])), cpu="8", pods=6,
                    labels={"zone": draw(st.sampled_from(["a", "b"]))}, unschedulable=draw(st.booleans()))
             for i in range(count)]
    pods: list[PodInfo] = []
    groups: dict[Any, GroupSpec] = {}
    for g in range(draw(st.integers(0, 5))):
        size = draw(st.integers(1, 6))
        zone = draw(st.sampled_from([None, "a", "b"]))
        kwargs = {"gpus": draw(st.integers(0, 8)), "cpu": str(draw(st.integers(0, 4))), "priority": draw(st.integers(0, 2)),
                  "node_selector": {"zone": zone} if zone else None}
        pods += gang(f"g{g}", size, **kwargs)
        groups[("team-a", f"g{g}")] = spec(draw(st.integers(1, size + 1)), draw(st.integers(0, 3)))
    pods += [a_pod(f"lone{i}", gpus=draw(st.integers(0, 4))) for i in range(draw(st.integers(0, 4)))]
    return nodes, pods, groups


def bind_all(pods: list[PodInfo], decisions: Sequence[Bind | Unschedulable]) -> list[PodInfo]:
    nodes = {d.pod.uid: d.node for d in decisions if isinstance(d, Bind)}
    return [p.__class__(**{**p.__dict__, "node_name": nodes.get(p.uid, p.node_name),
                           "phase": "Running" if p.uid in nodes else p.phase}) for p in pods]


@settings(max_examples=150, deadline=None)
@given(workloads(), st.data())
def test_no_gang_is_partially_bound_no_node_overfilled_every_bind_passes_the_filters(
        world: tuple[list[Node], list[PodInfo], dict[Any, GroupSpec]], data: Any) -> None:
    nodes, pods, groups = world
    # Two rounds: the second sees the first's binds as pods holding capacity, and a few of them finished.
    first = place(pods, nodes, groups, SCHEDULER)
    after_first = bind_all(pods, first)
    finished = data.draw(st.sets(st.sampled_from([p.uid for p in after_first]) if after_first else st.nothing()))
    after_first = [p.__class__(**{**p.__dict__, "phase": "Succeeded"}) if p.uid in finished and p.node_name else p
                   for p in after_first]
    second = place(after_first, nodes, groups, SCHEDULER)
    for before, decisions in ((pods, first), (after_first, second)):
        binds = [d for d in decisions if isinstance(d, Bind)]
        pending = [p for p in before if p.needs_placement(SCHEDULER)]
        decided = [d.pod.uid for d in binds] + [p.uid for d in decisions if isinstance(d, Unschedulable) for p in d.pods]
        assert sorted(decided) == sorted(p.uid for p in pending), "every pending pod gets exactly one decision"
        by_node = {n.name: n for n in nodes}
        for d in binds:
            assert node_reason(d.pod.constraints, by_node[d.node]) is None
        after = bind_all(before, decisions)
        for key, group in groups.items():
            newly = sum(1 for d in binds if (d.pod.namespace, d.pod.group) == key)
            held = sum(1 for p in after if (p.namespace, p.group) == key and (p.holds_resources or p.phase == "Succeeded"))
            assert newly == 0 or held >= group.min_member, f"gang {key} partially bound: {held}/{group.min_member}"
        for node in nodes:
            used: dict[str, Decimal] = {}
            for p in after:
                if p.node_name == node.name and p.holds_resources:
                    for resource, amount in p.requests:
                        used[resource] = used.get(resource, Decimal(0)) + amount
            if any(d.node == node.name for d in binds):
                assert all(v >= 0 for v in free_of(node, used).values()), f"{node.name} over its allocatable"
                assert all(r in node.allocatable or r == "pods" or v == 0 for r, v in used.items())
