"""kubeapi's list + watch against the stand-in API server, over real HTTP.

We test these aspects: a change the API server acknowledged but no watch event ever told of (what
the real control plane did once after an apiserver then etcd restart, docs/realcluster.md) reaches
the caller by the periodic relist, when it falls due by the injected clock and not before; a watch
that stays silent does not hold the relist back, since each watch asks the server to end it when
the relist falls due; a kind the server does not serve is an empty, synced list; and a caller that
may only watch starts from a watch that sends the objects there are.
(Resuming without a relist and relisting after 410 are tested through the controller's informer,
tests/controller/adapters/test_runtime_cluster.py; the gateway's and the keeper's use, in their own tests.)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import uuid
from typing import Any, Iterator

import pytest

from batchgate.clock import FakeClock, SystemClock
from kubeapi.client import CONFIGMAPS, NAMESPACES, KubeClient, Resource
from kubeapi.listwatch import ListReason, ListWatch
from localcluster.runner import LocalCluster
from tests.kubeapi.lost_events import write_without_event
from tests.controller.cluster import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of its own: no other test's writes may land between a lost event's steps."""
    with LocalCluster(tmp_path_factory.mktemp("listwatch")) as running:
        yield running


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[KubeClient]:
    with contextlib.closing(KubeClient.from_kubeconfig(str(cluster.kubeconfig))) as kube:
        yield kube


@pytest.fixture
def namespace(client: KubeClient) -> str:
    """A fresh namespace, so tests never see each other's objects."""
    return client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": f"lw-{uuid.uuid4().hex[:6]}"}})["metadata"]["name"]


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": "1"}}


class Seen:
    """What a ListWatch told its caller, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def listed(self, items: list[dict[str, Any]], why: ListReason) -> None:
        self.told.append((f"list {why}", ",".join(sorted(i["metadata"]["name"] for i in items))))

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.told.append((kind, obj["metadata"]["name"]))

    def names(self) -> set[str]:
        return {name for what, names in self.told for name in names.split(",") if name}


def test_a_change_no_watch_event_told_of_comes_with_the_periodic_relist_when_it_is_due(
        cluster: LocalCluster, client: KubeClient, namespace: str) -> None:
    clock, seen = FakeClock(), Seen()
    watch = ListWatch(client, CONFIGMAPS, seen.listed, seen.event, clock=clock, namespace=namespace,
                      watch_timeout=1, relist_every=600)
    watch.start()
    try:
        assert watch.synced.wait(10)
        client.create(CONFIGMAPS, configmap("told", namespace))
        eventually(lambda: ("ADDED", "told") in seen.told, what="the watched create")
        write_without_event(cluster, configmap("lost", namespace))
        watches = watch.watches
        eventually(lambda: watch.watches >= watches + 2, what="two more 1 s watches")
        assert "lost" not in seen.names() and watch.lists == 1, "not due yet: no relist, and no event told of it"
        clock.advance(_dt.timedelta(seconds=600))
        eventually(lambda: ("list periodic", "lost,told") in seen.told, what="the periodic relist")
        assert watch.lists == 2
    finally:
        watch.stop()
    assert not watch.alive()


def test_a_silent_watch_does_not_hold_the_relist_back(cluster: LocalCluster, client: KubeClient,
                                                      namespace: str) -> None:
    seen = Seen()
    watch = ListWatch(client, CONFIGMAPS, seen.listed, seen.event, clock=SystemClock(), namespace=namespace,
                      watch_timeout=300, relist_every=2)
    watch.start()
    try:
        assert watch.synced.wait(10)
        write_without_event(cluster, configmap("lost", namespace))
        eventually(lambda: "lost" in seen.names(), timeout=15, what="the relist, though the watch asked for 300 s")
        assert seen.told[-1] == ("list periodic", "lost")
    finally:
        watch.stop()


def test_a_kind_the_server_does_not_serve_is_an_empty_synced_list(client: KubeClient) -> None:
    seen = Seen()
    watch = ListWatch(client, Resource("Nothing", "nothing.test", "v1", "nothings"), seen.listed, seen.event,
                      clock=SystemClock(), watch_timeout=1)
    watch.start()
    try:
        assert watch.synced.wait(10)
        assert (watch.served, seen.told) == (False, [("list unserved", "")])
    finally:
        watch.stop()


def test_a_caller_that_may_only_watch_gets_the_objects_there_are_as_events_then_the_changes(
        client: KubeClient, namespace: str) -> None:
    client.create(CONFIGMAPS, configmap("before", namespace))
    seen = Seen()
    watch = ListWatch(client, CONFIGMAPS, seen.listed, seen.event, clock=SystemClock(), namespace=namespace,
                      field_selector="metadata.name=before", watch_timeout=1, watch_only=True)
    watch.start()
    try:
        eventually(lambda: seen.told[:1] == [("ADDED", "before")], what="the object there is, as an event")
        client.patch(CONFIGMAPS, "before", namespace, {"data": {"v": "2"}})
        eventually(lambda: ("MODIFIED", "before") in seen.told, what="the change")
        assert watch.lists == 0
    finally:
        watch.stop()

