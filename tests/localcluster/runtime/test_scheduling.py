"""We test the default scheduler's pure decision: requests as Kubernetes computes them, each
filter, the FailedScheduling histogram, scoring, and a cycle that sees its own bindings."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.sim.resources import pod_requests
from localcluster.sim.scheduling import Bind, Unschedulable, needs_scheduling, node_states, place, schedule_cycle
from tests.localcluster.runtime.builders import a_container, a_node, a_pod, taint

GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(a_pod("p", requests={"cpu": "500m"}), {"cpu": Decimal("0.5")}, id="a plain request is taken as is"),
        pytest.param(
            a_pod("p", limits={GPU: "2", "cpu": "1"}),
            {GPU: Decimal(2), "cpu": Decimal(1)},
            id="requests default from limits, extended resources included",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "250m"}, limits={"cpu": "1", "memory": "1Gi"}),
            {"cpu": Decimal("0.25"), "memory": Decimal(2**30)},
            id="an explicit request wins over its limit",
        ),
        pytest.param(
            a_pod(
                "p",
                containers=[a_container("a", requests={"cpu": "1"}), a_container("b", requests={"cpu": "2"})],
                init_containers=[a_container("init", requests={"cpu": "4", "memory": "1Gi"})],
            ),
            {"cpu": Decimal(4), "memory": Decimal(2**30)},
            id="a big init container sets the pod request per resource",
        ),
        pytest.param(
            a_pod(
                "p",
                containers=[a_container("a", requests={"cpu": "1"})],
                init_containers=[
                    a_container("sidecar", requests={"cpu": "1"}, restartPolicy="Always"),
                    a_container("init", requests={"cpu": "1500m"}),
                ],
            ),
            {"cpu": Decimal("2.5")},
            id="sidecars add to the containers and to later init containers",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "1"}, overhead={"cpu": "250m"}),
            {"cpu": Decimal("1.25")},
            id="pod overhead is added",
        ),
    ],
)
def test_pod_requests_follow_kubernetes_rules(pod, expected):
    assert pod_requests(pod) == expected


def decide(pod, nodes, existing=()):
    return place(pod, node_states(nodes, existing))


@pytest.mark.parametrize(
    ("pod", "nodes", "expected"),
    [
        pytest.param(
            a_pod("p", limits={GPU: "4"}),
            [a_node("cpu-1"), a_node("gpu-1", gpus=8)],
            "gpu-1",
            id="a gpu pod goes to the only node with gpus",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "1"}, nodeSelector={"zone": "b"}),
            [a_node("a-1", labels={"zone": "a"}), a_node("b-1", labels={"zone": "b"})],
            "b-1",
            id="nodeSelector restricts the nodes",
        ),
        pytest.param(
            a_pod(
                "p",
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["a100"]}]}
                            ]
                        }
                    }
                },
            ),
            [a_node("n1", labels={"gpu-type": "t4"}), a_node("n2", labels={"gpu-type": "a100"})],
            "n2",
            id="required node affinity restricts the nodes",
        ),
        pytest.param(
            a_pod("p", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]),
            [a_node("tainted", taints=[taint("gpu", "true")], cpu="64")],
            "tainted",
            id="a toleration admits the pod onto a tainted node",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "1"}),
            [a_node("busy", cpu="8"), a_node("idle", cpu="8")],
            "idle",
            id="the least allocated node wins",
        ),
        pytest.param(
            a_pod("p", tolerations=[{"operator": "Exists"}]),
            [a_node("cordoned", unschedulable=True)],
            "cordoned",
            id="a pod tolerating everything may land on a cordoned node",
        ),
    ],
)
def test_pods_bind_to_the_node_the_filters_and_scores_choose(pod, nodes, expected):
    existing = [a_pod("other", requests={"cpu": "6"}, node="busy", phase="Running")]
    assert decide(pod, nodes, existing) == Bind("default", "p", expected)


@pytest.mark.parametrize(
    ("pod", "nodes", "message"),
    [
        pytest.param(
            a_pod("p", limits={GPU: "4"}),
            [
                a_node("small", gpus=2),
                a_node("t1", gpus=8, taints=[taint("dedicated", "infra")]),
                a_node("t2", gpus=8, taints=[taint("dedicated", "infra")]),
            ],
            "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
            "2 node(s) had untolerated taint {dedicated: infra}.",
            id="too many gpus and untolerated taints are counted per node",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "100", "memory": "1Ti"}),
            [a_node("n1"), a_node("n2")],
            "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.",
            id="a pod bigger than every node names each shortfall",
        ),
        pytest.param(
            a_pod("p", nodeSelector={"x": "z"}, requests={"cpu": "100"}),
            [a_node("n1", unschedulable=True)],
            "0/1 nodes are available: 1 node(s) were unschedulable.",
            id="a node reports only its first failing filter",
        ),
        pytest.param(
            a_pod("p", nodeSelector={"x": "z"}),
            [a_node("n1", unschedulable=True), a_node("n2", labels={"x": "y"})],
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable.",
            id="reasons are sorted as strings like the real message",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "1"}),
            [a_node("full", pods="1")],
            "0/1 nodes are available: 1 Too many pods.",
            id="the pods capacity is a resource too",
        ),
        pytest.param(
            a_pod("p", requests={"cpu": "lots"}),
            [a_node("n1")],
            "invalid resource request: container main resources cpu: invalid quantity 'lots'",
            id="a request that is not a quantity is reported, not raised",
        ),
        pytest.param(a_pod("p"), [], "no nodes available to schedule pods", id="no nodes at all"),
    ],
)
def test_unschedulable_pods_get_the_real_failed_scheduling_message(pod, nodes, message):
    existing = [a_pod("filler", requests={"cpu": "1"}, node="full", phase="Running")]
    assert decide(pod, nodes, existing) == Unschedulable("default", "p", message)


def test_finished_pods_free_their_resources():
    nodes = [a_node("n1", cpu="2")]
    done = a_pod("done", requests={"cpu": "2"}, node="n1", phase="Succeeded")
    assert decide(a_pod("p", requests={"cpu": "2"}), nodes, [done]) == Bind("default", "p", "n1")


def test_a_cycle_counts_the_pods_it_already_bound():
    nodes = [a_node("n1", gpus=8), a_node("n2", gpus=8)]
    pending = [a_pod(f"p{i}", limits={GPU: "4"}) for i in range(5)]
    decisions = schedule_cycle(pending, node_states(nodes, []))
    bound = [d for d in decisions if isinstance(d, Bind)]
    assert sorted(d.node for d in bound) == ["n1", "n1", "n2", "n2"]
    assert [d.name for d in decisions if isinstance(d, Unschedulable)] == ["p4"]


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(a_pod("p"), True, id="an unbound pod for the default scheduler needs scheduling"),
        pytest.param(a_pod("p", schedulerName="scheduler-plugins-scheduler"), False, id="another scheduler's pod is left alone"),
        pytest.param(a_pod("p", node="n1"), False, id="a bound pod is done"),
        pytest.param(a_pod("p", schedulingGates=[{"name": "g"}]), False, id="a gated pod waits"),
    ],
)
def test_which_pods_the_default_scheduler_takes(pod, expected):
    assert needs_scheduling(pod) is expected


@settings(max_examples=60, deadline=None)
@given(
    gpus=st.lists(st.integers(min_value=0, max_value=8), min_size=1, max_size=6),
    asks=st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=20),
)
def test_a_cycle_never_overcommits_a_node(gpus, asks):
    nodes = [a_node(f"n{i}", gpus=g) for i, g in enumerate(gpus)]
    pending = [a_pod(f"p{i:02d}", limits={GPU: str(n)}) for i, n in enumerate(asks)]
    decisions = schedule_cycle(pending, node_states(nodes, []))
    used: dict[str, int] = {}
    for decision, ask in zip(decisions, asks):
        if isinstance(decision, Bind):
            used[decision.node] = used.get(decision.node, 0) + ask
    for i, g in enumerate(gpus):
        assert used.get(f"n{i}", 0) <= g
    # A pod left pending really did not fit anywhere at its turn.
    for decision in decisions:
        if isinstance(decision, Unschedulable):
            assert "Insufficient nvidia.com/gpu" in decision.message
