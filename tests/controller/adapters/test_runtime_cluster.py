"""The controller runtime against the real local cluster, through the real kubernetes client:
CRDs installed with kubectl, informers (list, watch, resume, 410 relist), status writes with
conflict retry, Events seen by `kubectl describe`, Lease handover."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from batchgate.clock import FakeClock, SystemClock
from controller.adapters.events import EventRecorder
from controller.adapters.informer import Informer
from controller.adapters.kube import RESOURCES, ApiError, KubeClient
from controller.adapters.leader import LeaderElector
from controller.adapters.store import SharedStore
from controller.adapters.writer import NotLeader, Writer
from controller.decisions.leader_election import LeaseTiming
from controller.state.cache import Change
from localcluster.runner import LocalCluster
from tests.kubeapi.lost_events import write_without_event
from tests.controller.cluster import CONTROLLER_NAMESPACE, ROOT, eventually, kubectl

pytestmark = pytest.mark.timeout(120)
CM = RESOURCES["ConfigMap"]
WL = RESOURCES["Workload"]
LEASES = CONTROLLER_NAMESPACE  # where the controller's Role lets its account keep Leases


def configmap(name: str, ns: str, value: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"v": value}}


def names(store: SharedStore, kind: str = "ConfigMap", ns: str | None = None) -> list[str]:
    return sorted(o["metadata"]["name"] for o in store.list(kind, ns))


def start_informer(client: KubeClient, ns: str, **kw: Any) -> tuple[Informer, SharedStore, list[Change]]:
    store, seen = SharedStore(), []
    kw.setdefault("watch_timeout", 2)  # the server ends each watch soon, so the cluster stops quickly
    informer = Informer(client, CM, store, seen.append, namespace=ns, **kw)
    informer.start()
    assert informer.synced.wait(10)
    return informer, store, seen


def test_crds_install_with_kubectl_and_print_their_columns(cluster: Any, namespace: str) -> None:
    out = kubectl(cluster.kubeconfig, "apply", "-f", str(ROOT / "manifests" / "crds" / "batchgate" / "kueue.x-k8s.io_clusterqueues.yaml"))
    assert "clusterqueues.kueue.x-k8s.io" in out.stdout
    name = f"cq-{uuid.uuid4().hex[:6]}"
    manifest = Path(cluster.workdir) / f"{name}.yaml"
    manifest.write_text(
        f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {{name: {name}}}\n"
        "spec: {cohort: all, namespaceSelector: {}, resourceGroups: [{coveredResources: [cpu], flavors: "
        "[{name: default, resources: [{name: cpu, nominalQuota: 8}]}]}]}\n")
    kubectl(cluster.kubeconfig, "apply", "-f", str(manifest))
    table = kubectl(cluster.kubeconfig, "get", "cq", name).stdout.splitlines()
    assert table[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert table[1].split()[:2] == [name, "all"]
    wide = kubectl(cluster.kubeconfig, "get", "clusterqueue", name, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"]
    assert wide[1].split()[2] == "BestEffortFIFO", "the schema default is applied"
    empty = kubectl(cluster.kubeconfig, "get", "aw", "-n", namespace)
    assert "No resources found" in empty.stderr + empty.stdout


def test_informer_lists_then_follows_every_change(client: KubeClient, namespace: str) -> None:
    client.create(CM, configmap("before", namespace))
    informer, store, seen = start_informer(client, namespace)
    try:
        assert names(store) == ["before"]
        client.create(CM, configmap("after", namespace))
        client.patch(CM, "before", namespace, {"data": {"v": "2"}})
        client.delete(CM, "after", namespace)
        eventually(lambda: [(c.type, c.key.name) for c in seen][-1:] == [("DELETED", "after")], what="the delete")
        assert [(c.type, c.key.name) for c in seen] == [
            ("ADDED", "before"), ("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]
        assert store.get("ConfigMap", namespace, "before")["data"] == {"v": "2"}
    finally:
        informer.stop()


def test_informer_resumes_from_its_last_version_without_relisting(client: KubeClient, namespace: str) -> None:
    informer, store, _ = start_informer(client, namespace, watch_timeout=1)
    try:
        eventually(lambda: informer.watches >= 3, timeout=15, what="the server to end three 1 s watches")
        client.create(CM, configmap("late", namespace))
        eventually(lambda: names(store) == ["late"], what="the change made between watches")
        assert informer.lists == 1, "a watch that simply ended resumes from its resourceVersion"
    finally:
        informer.stop()


def test_informer_relists_when_its_version_is_too_old(client: KubeClient, namespace: str) -> None:
    informer, store, _ = start_informer(client, namespace)
    informer.stop()
    stale_version = informer.resource_version
    client.create(CM, configmap("survivor", namespace))
    with ThreadPoolExecutor(8) as pool:  # push the informer's version out of the server's watch history
        list(pool.map(lambda i: client.create(CM, configmap(f"filler-{i}", namespace)), range(1010)))
    second_store, seen = SharedStore(), []
    for obj in store.list("ConfigMap"):
        second_store.apply("ConfigMap", "ADDED", obj)
    relisting = Informer(client, CM, second_store, seen.append, namespace=namespace,
                         watch_timeout=2)
    relisting.resource_version = stale_version
    relisting.start()
    try:
        eventually(lambda: relisting.lists == 1, timeout=20, what="the relist after 410")
        # the store takes the relist before the handler hears of its changes: wait for the handler
        eventually(lambda: sum(1 for c in seen if c.type == "ADDED") >= 1011, timeout=20,
                   what="the relist diff delivered as changes")
        assert len(names(second_store)) == 1011 and "survivor" in names(second_store)
        assert sum(1 for c in seen if c.type == "ADDED") == 1011
    finally:
        relisting.stop()


def test_a_periodic_relist_tells_a_change_no_event_delivered_as_a_change_and_counts_it(tmp_path: Path) -> None:
    """The guard against a watch that went silent or lost an event (docs/realcluster.md's open
    finding): the relist's diff reaches the handler like any change, and is counted per kind."""
    clock = FakeClock()
    missed: list[tuple[str, int]] = []
    with LocalCluster(tmp_path / "cluster") as own:  # its own: nothing may write between the lost event's steps
        kube = KubeClient.from_kubeconfig(str(own.kubeconfig))
        kube.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        informer, store, seen = start_informer(kube, "t", watch_timeout=1, clock=clock, relist_every=600,
                                               on_missed=lambda kind, changes: missed.append((kind, changes)))
        try:
            write_without_event(own, configmap("lost", "t"))
            kube.create(CM, configmap("later", "t"))  # the watch goes on past the lost one, as it did then
            watches = informer.watches
            eventually(lambda: informer.watches >= watches + 2, what="two more 1 s watches")
            assert names(store) == ["later"] and missed == []
            clock.advance(dt.timedelta(seconds=600))
            # the store takes the relist before the handler hears of it: wait for the handler
            eventually(lambda: len(seen) >= 2, what="the periodic relist's change handled")
            assert names(store) == ["later", "lost"]
            assert [(c.type, c.key.name) for c in seen] == [("ADDED", "later"), ("ADDED", "lost")]
            assert missed == [("ConfigMap", 1)]
        finally:
            informer.stop()
            kube.close()


def test_status_write_retries_after_a_conflict(client: KubeClient, controller_api: KubeClient, namespace: str) -> None:
    wl = client.create(WL, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                            "metadata": {"name": "w", "namespace": namespace},
                            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}})
    client.patch(WL, "w", namespace, {"status": {"conditions": [
        {"type": "Other", "status": "True", "reason": "Elsewhere", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
                 subresource="status")
    writer = Writer(controller_api, lambda: True)
    calls: list[str] = []

    def compute(current: dict[str, Any]) -> dict[str, Any]:
        calls.append(current["metadata"]["resourceVersion"])
        kept = (current.get("status") or {}).get("conditions") or []
        return {"status": {"conditions": [*kept, {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                                  "message": "Quota reserved in ClusterQueue cq",
                                                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}

    written = writer.update_status(WL, wl, compute)
    assert writer.conflicts == 1 and len(calls) == 2, "the stale version was refused, then recomputed"
    assert [c["type"] for c in written["status"]["conditions"]] == ["Other", "QuotaReserved"]
    assert written["spec"]["queueName"] == "q"


def test_writes_are_refused_when_not_leading(client: KubeClient, controller_api: KubeClient,
                                            namespace: str) -> None:
    writer = Writer(controller_api, lambda: False)
    with pytest.raises(NotLeader):
        writer.create(CM, configmap("nope", namespace))
    with pytest.raises(ApiError):
        client.get(CM, "nope", namespace)


def test_events_are_told_by_kubectl_describe(cluster: Any, client: KubeClient, controller_api: KubeClient,
                                            namespace: str) -> None:
    obj = client.create(CM, configmap("described", namespace))
    recorder = EventRecorder(Writer(controller_api, lambda: True), SystemClock(), "test-instance")
    recorder.normal(obj, "CreatedWorkload", "Created Workload: ns/job-x-12345")
    recorder.warning(obj, "InvalidJob", 'workload priority class "gold" not found')
    recorder.warning(obj, "InvalidJob", 'workload priority class "gold" not found')
    out = kubectl(cluster.kubeconfig, "describe", "configmap", "described", "-n", namespace).stdout
    events = out[out.index("Events:"):]
    assert "CreatedWorkload" in events and "Created Workload: ns/job-x-12345" in events
    assert "batchgate-controller" in events
    (line,) = [l for l in events.splitlines() if "InvalidJob" in l]
    assert "Warning" in line and "(x2 over" in line, "a repeat bumps the count instead of adding an Event"


def test_leader_election_hands_over_when_the_leader_stops_renewing(controller_api: KubeClient) -> None:
    clock = FakeClock(dt.datetime.now(dt.timezone.utc))
    timing = LeaseTiming()
    lease_name = f"lease-{uuid.uuid4().hex[:6]}"
    changes: list[str] = []
    a = LeaderElector(controller_api, LEASES, lease_name, "a", clock=clock, timing=timing,
                      on_started=lambda: changes.append("a leads"), on_stopped=lambda: changes.append("a stops"))
    b = LeaderElector(controller_api, LEASES, lease_name, "b", clock=clock, timing=timing,
                      on_started=lambda: changes.append("b leads"))
    assert a.step() and a.is_leader
    assert not b.step() and b.holder == "a", "a live lease is respected"
    clock.advance(timing.renew_deadline)  # a is stuck: no renewal for 10 s
    assert not a.is_leader, "writes stop the moment the renew deadline passes"
    assert not b.step(), "but the lease itself has not expired yet"
    clock.advance(timing.lease_duration - timing.renew_deadline + dt.timedelta(seconds=1))
    assert b.step() and b.is_leader
    lease = controller_api.get(RESOURCES["Lease"], lease_name, LEASES)
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)
    assert not a.step(), "the old leader sees the new holder and stays down"
    assert changes == ["a leads", "b leads", "a stops"]


def test_a_renewal_that_lands_after_the_renew_deadline_starts_a_new_term(controller_api: KubeClient) -> None:
    """While `is_leader` was False the workers dropped their keys; only `on_started` offers them again
    (an etcd restart held a renewal past the deadline and an AppWrapper was never reconciled)."""
    clock = FakeClock(dt.datetime.now(dt.timezone.utc))
    timing = LeaseTiming()
    changes: list[str] = []
    a = LeaderElector(controller_api, LEASES, f"lapse-{uuid.uuid4().hex[:6]}", "a", clock=clock, timing=timing,
                      on_started=lambda: changes.append("a leads"), on_stopped=lambda: changes.append("a stops"))
    assert a.step() and a.is_leader
    clock.advance(timing.renew_deadline)  # the renewal is held up: the term lapses, workers stand down
    assert not a.is_leader
    assert a.step() and a.is_leader, "the lease is still a's: the held renewal succeeds"
    assert changes == ["a leads", "a stops", "a leads"], "the lapsed term ended and a new one started"
    clock.advance(timing.retry_period)
    assert a.step() and changes == ["a leads", "a stops", "a leads"], "a renewal in time continues the term"


def test_two_candidates_racing_for_a_free_lease_elect_exactly_one(controller_api: KubeClient) -> None:
    clock = FakeClock(dt.datetime.now(dt.timezone.utc))
    lease_name = f"race-{uuid.uuid4().hex[:6]}"
    electors = [LeaderElector(controller_api, LEASES, lease_name, f"c{i}", clock=clock) for i in range(4)]
    barrier = threading.Barrier(len(electors))
    results: list[bool] = []

    def attempt(e: LeaderElector) -> None:
        barrier.wait()
        results.append(e.step())

    threads = [threading.Thread(target=attempt, args=(e,)) for e in electors]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results.count(True) == 1
    assert sum(e.is_leader for e in electors) == 1
