"""The real cluster's pure pieces: its token file, the cause a failed program's log gives, the
loopback service range, and which listener and backend the kube-proxy picks for a Service."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from localcluster.runtime.service_proxy import backends, served, wanted_listeners
from localcluster.sim.endpoints import ADDRESS_ANNOTATION, LOOPBACK_POD_RANGE, NoEndpoints
from localcluster.users import DEFAULT_USERS
from realcluster.cluster import RealCluster, RealClusterError, service_range
from realcluster.pki import COMPONENTS, token_csv
from realcluster.processes import cause, free_port, listeners, port_taken


def test_the_token_file_gives_each_user_its_uid_and_groups_without_authenticated() -> None:
    users = [*DEFAULT_USERS, *COMPONENTS]
    tokens = {u.name: f"t-{u.name}" for u in users}
    rows = token_csv(users, tokens).splitlines()
    assert rows[0] == "t-admin,admin,admin-uid,system:masters"
    assert rows[1] == "t-alice,alice,1001", "no fourth column: an empty one is the group \"\" to kube-apiserver"
    assert "t-kubelet,system:node:localcluster-kubelets,system:node:localcluster-kubelets,system:nodes" in rows


@pytest.mark.parametrize("log, expected", [
    ("I0101 starting\nE0101 listen tcp 127.0.0.1:6443: bind: address already in use\n",
     "a port it needs is taken: E0101 listen tcp 127.0.0.1:6443: bind: address already in use"),
    ('{"level":"fatal","msg":"failed to start etcd","error":"resource temporarily unavailable on member lock"}',
     "its data dir is locked by another etcd: "),
    ("I0101 one\nE0101 error: unable to load server certificate\nI0101 two\n",
     "E0101 error: unable to load server certificate"),
    ("", "no output"),
    ('2026-11-29T07:51:23Z\tERROR\tsetup\tproblem starting manager\t{"error": "open /tmp/x/tls.crt: no such file"}\n'
     "sigs.k8s.io/controller-runtime/pkg/log.(*delegatingLogSink).Error\n\t/go/pkg/mod/log/deleg.go:142\n"
     "github.com/go-logr/logr.Logger.Error\nmain.main\n",
     '2026-11-29T07:51:23Z\tERROR\tsetup\tproblem starting manager\t{"error": "open /tmp/x/tls.crt'),
], ids=["a taken port is named", "a locked etcd data dir is named", "else the last error line", "an empty log",
        "a Go stack trace after the error is not the reason"])
def test_a_failed_program_is_explained_by_one_line_of_its_log(log: str, expected: str) -> None:
    assert cause(log).startswith(expected)


def test_service_ranges_are_loopback_and_never_the_process_pods_range() -> None:
    rng = random.Random(7)
    for _ in range(200):
        network = service_range(rng)
        assert network.is_loopback and network.prefixlen == 24
        assert not network.overlaps(LOOPBACK_POD_RANGE)


def _service(cluster_ip: str, ports: list[dict[str, object]], annotations: dict[str, str] | None = None) -> dict:
    return {"metadata": {"name": "gw", "namespace": "ns", "annotations": annotations or {}},
            "spec": {"clusterIP": cluster_ip, "clusterIPs": [cluster_ip], "selector": {"app": "gw"}, "ports": ports}}


@pytest.mark.parametrize("cluster_ip, ports, expected", [
    ("127.200.3.10", [{"port": 443, "targetPort": 8443}], {("127.200.3.10", 443)}),
    ("127.200.3.10", [{"port": 53, "protocol": "UDP"}], set()),
    ("10.96.0.10", [{"port": 443}], set()),
    ("None", [{"port": 443}], set()),
], ids=["a loopback cluster IP is served on each TCP port", "UDP ports are not served",
        "a routable cluster IP is never bound here", "a headless Service has nothing to serve"])
def test_which_listeners_a_service_needs(cluster_ip: str, ports: list[dict[str, object]],
                                         expected: set[tuple[str, int]]) -> None:
    assert wanted_listeners(_service(cluster_ip, ports)) == expected


def _pod(name: str, ip: str, ready: bool, namespace: str = "ns") -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"app": "gw"}},
            "spec": {"containers": [{"name": "c", "ports": [{"name": "https", "containerPort": 8443}]}]},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_a_connection_goes_to_ready_pods_of_the_service_in_turn() -> None:
    service = _service("127.200.3.10", [{"port": 443, "targetPort": "https"}])
    pods = [_pod("a", "127.1.0.5", True), _pod("b", "127.1.0.6", True), _pod("c", "127.1.0.7", False),
            _pod("d", "127.1.0.8", True, namespace="other")]
    assert backends(service, pods, 443, 0) == [("127.1.0.5", 8443), ("127.1.0.6", 8443)]
    assert backends(service, pods, 443, 1) == [("127.1.0.6", 8443), ("127.1.0.5", 8443)]


def test_no_ready_pod_means_no_backend() -> None:
    with pytest.raises(NoEndpoints):
        backends(_service("127.200.3.10", [{"port": 443}]), [_pod("c", "127.1.0.7", False)], 443, 0)


def test_an_annotated_service_goes_to_the_address_it_names() -> None:
    service = _service("127.200.3.10", [{"port": 443}], {ADDRESS_ANNOTATION: "127.0.0.1:9443"})
    assert backends(service, [], 443, 3) == [("127.0.0.1", 9443)]


def test_a_taken_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(RealClusterError) as caught:
            RealCluster(tmp_path, port=port, binaries={})
    assert str(caught.value) == f"port {port} on 127.0.0.1 is taken: pass another --port, or 0 for a free one"


def test_an_etcd_data_dir_left_by_a_crash_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "etcd" / "member").mkdir(parents=True)
    with pytest.raises(RealClusterError) as caught:
        RealCluster(tmp_path, binaries={}).start()
    assert str(caught.value) == (f"etcd data dir {tmp_path / 'etcd'} is left from an earlier run that did not stop "
                                 "cleanly: remove it, or use another --workdir")


def test_a_service_is_served_only_while_it_has_a_ready_backend() -> None:
    service = _service("127.200.3.10", [{"port": 443, "targetPort": "https"}])
    assert served(service, [_pod("c", "127.1.0.7", False)]) == set()
    assert served(service, [_pod("c", "127.1.0.7", True)]) == {("127.200.3.10", 443)}
    annotated = _service("127.200.3.10", [{"port": 443}], {ADDRESS_ANNOTATION: "127.0.0.1:9443"})
    assert served(annotated, []) == {("127.200.3.10", 443)}


def test_a_free_port_is_never_handed_out_twice_in_one_process() -> None:
    """Ports are bound only when their programs start: a just-released port offered again gave etcd
    and kube-apiserver the same one in a full run (kube-apiserver: bind: address already in use)."""
    ports = [free_port() for _ in range(3000)]
    assert len(set(ports)) == len(ports)


def test_a_listener_at_one_loopback_address_blocks_a_program_that_listens_on_every_address() -> None:
    """The AppWrapper controller binds :9443; a stand-in pod at 127.1.x.y:9443 blocks it, though
    127.0.0.1 alone is free (a full run's peers test failed so): the check and its message see it."""
    with socket.socket() as held:
        held.bind(("127.1.0.9", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not port_taken(port)
        assert port_taken(port, host="0.0.0.0")
        assert listeners(port) == [f"127.1.0.9:{port}"]
    with socket.socket(socket.AF_INET6) as held:
        held.bind(("::", 0))
        held.listen()
        port = held.getsockname()[1]
        assert listeners(port) == [f"[::]:{port}"]
