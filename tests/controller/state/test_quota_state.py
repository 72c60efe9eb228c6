"""The quota state as a watch feeds it: real changes move parked workloads back, echoes of what
is already known (our own status writes, resyncs) change nothing."""

from __future__ import annotations

import pytest

from batchgate.api.kueue import ClusterQueue, LocalQueue, ResourceFlavor, Workload
from batchgate.clock import FakeClock
from controller.simulation import Simulation
from tests.controller.decisions.trace_builders import T0, basic, cluster_queue, flavor, local_queue, wl_key, workload


def parked_behind_a_full_queue() -> Simulation:
    sim = Simulation(FakeClock(T0))
    for obj in basic(cpu=10) + [workload("running", cpu=8, admitted_to="cq"), workload("waiting", cpu=5, created=1)]:
        sim.apply(obj)
    sim.run(None)
    assert sim.state.pending.state_of(wl_key("ns/waiting")) == "inadmissible"
    return sim


@pytest.mark.parametrize("echo", [
    pytest.param(lambda s: s.state.put_workload(Workload.from_dict(workload("waiting", cpu=5, created=1))),
                 id="the parked workload itself seen again"),
    pytest.param(lambda s: s.state.put_workload(Workload.from_dict(workload("running", cpu=8, admitted_to="cq"))),
                 id="the admitted workload seen again"),
    pytest.param(lambda s: s.state.put_cluster_queue(ClusterQueue.from_dict(cluster_queue("cq", cpu=10))),
                 id="the ClusterQueue seen again"),
    pytest.param(lambda s: s.state.put_local_queue(LocalQueue.from_dict(local_queue("lq", "cq"))),
                 id="the LocalQueue seen again"),
    pytest.param(lambda s: s.state.put_flavor(ResourceFlavor.from_dict(flavor())), id="the flavor seen again"),
    # Not echoes, but nothing they change can let a parked workload in (Kueue asks nothing back either)
    pytest.param(lambda s: s.state.put_namespace("other", {"team": "b"}), id="another namespace created"),
    pytest.param(lambda s: s.state.put_namespace("ns", {"team": "a"}),
                 id="its namespace labelled, already selected by every ClusterQueue"),
    pytest.param(lambda s: s.state.put_flavor(ResourceFlavor.from_dict(flavor("other", labels={"zone": "a"}))),
                 id="a flavor that no ClusterQueue names created"),
])
def test_echoes_leave_parked_workloads_parked(echo) -> None:
    sim = parked_behind_a_full_queue()
    generation = dict(sim.state.generation)
    echo(sim)
    assert sim.state.pending.state_of(wl_key("ns/waiting")) == "inadmissible"
    assert sim.state.book.usage["cq"] == {("default", "cpu"): 8000}
    assert sim.state.generation == generation


@pytest.mark.parametrize("change", [
    pytest.param(lambda s: s.state.put_cluster_queue(ClusterQueue.from_dict(cluster_queue("cq", cpu=20))),
                 id="the ClusterQueue's quota raised"),
    pytest.param(lambda s: s.state.finish(wl_key("ns/running")), id="the running workload finished"),
    pytest.param(lambda s: s.state.put_workload(Workload.from_dict(workload("running", cpu=8))),
                 id="the running workload's quota released"),
    pytest.param(lambda s: s.state.put_flavor(ResourceFlavor.from_dict(flavor(labels={"zone": "a"}))),
                 id="the flavor of its ClusterQueue changed"),
])
def test_real_changes_move_parked_workloads_back(change) -> None:
    sim = parked_behind_a_full_queue()
    change(sim)
    assert sim.state.pending.state_of(wl_key("ns/waiting")) == "active"


def test_an_assumed_admission_is_undone_when_its_write_fails() -> None:
    sim = parked_behind_a_full_queue()
    sim.state.finish(wl_key("ns/running"))
    sim.state.assume(wl_key("ns/waiting"), "cq", {("default", "cpu"): 5000}, {"main": {"cpu": "default"}}, T0)
    with pytest.raises(ValueError, match="already holds quota"):
        sim.state.assume(wl_key("ns/waiting"), "cq", {("default", "cpu"): 5000}, {"main": {"cpu": "default"}}, T0)
    sim.state.release(wl_key("ns/waiting"), requeue=True)
    assert sim.state.book.usage["cq"] == {("default", "cpu"): 0}
    assert sim.state.pending.state_of(wl_key("ns/waiting")) == "active"


def test_a_namespace_asks_back_only_the_cluster_queues_that_select_it_anew() -> None:
    """Kueue's cqNamespaceHandler: a namespace's labels ask back the ClusterQueues whose selector
    selects it now and did not before; a namespace not seen yet counts as unlabelled."""
    sim = Simulation(FakeClock(T0))
    for obj in [flavor(), cluster_queue("cq-a", cpu=10, selector={"matchLabels": {"team": "a"}}),
                cluster_queue("cq-b", cpu=10, selector={"matchLabels": {"team": "b"}}),
                local_queue("lq-a", "cq-a", ns="ns-a"), local_queue("lq-b", "cq-b", ns="ns-b"),
                workload("a", ns="ns-a", queue="lq-a", cpu=1), workload("b", ns="ns-b", queue="lq-b", cpu=1)]:
        sim.apply(obj)
    sim.run(None)
    state = sim.state
    assert [state.pending.state_of(wl_key(k)) for k in ("ns-a/a", "ns-b/b")] == ["inadmissible", "inadmissible"]
    state.put_namespace("ns-a", {"team": "a"})
    assert [state.pending.state_of(wl_key(k)) for k in ("ns-a/a", "ns-b/b")] == ["active", "inadmissible"]
