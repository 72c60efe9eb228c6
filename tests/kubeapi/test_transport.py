"""The kept-alive transport under KubeClient, against a real TLS server that misbehaves on request:
connections kept per thread, one the server closed while idle replaced, a request broken under
way sent again only when that cannot repeat a change, timeouts, and the TLS settings of a
kubeconfig (CA, server name, no verification) as urllib3 applied them."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from batchgate.kinds.model import Resource
from kubeapi.client import ApiError, KubeClient
from kubeapi.transport import MAX_RETRY_AFTER, RETRIES_AFTER, Endpoint, Transport, serves
from tests.tls_stub import TlsStub

TOKEN = "transport-token"
THINGS = Resource("Thing", "example.com", "v1", "things")


class Server:
    """Answers every path with what it was asked; `drop_next` closes the next request's connection
    unanswered; `/close-soon` answers, then closes the connection; `/slow` answers after 2 s;
    `/chunked` answers in chunks; `/last` answers with `Connection: close`."""

    def __init__(self, workdir: Path) -> None:
        self.hits: list[tuple[str, str, int]] = []  # method, path, client port
        self.drop_next = False
        self.closed = threading.Event()
        self.busy, self.retry_after = 0, "1"  # answers 429 to come on /busy, and the wait they ask for

        def app() -> web.Application:
            made = web.Application()
            made.router.add_route("*", "/{tail:.*}", self._answer)
            return made

        self._server = TlsStub(app, workdir / "pki", "api", "stub", "transport stub")
        self.port = self._server.port
        self.kubeconfig = self._server.write_kubeconfig(workdir / "kubeconfig", TOKEN)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.hits.append((request.method, request.path, peer[1] if peer else 0))
        if self.drop_next:
            self.drop_next = False
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized"}, status=401)
        if request.path.endswith("/busy") and self.busy > 0:
            self.busy -= 1
            return web.json_response({"kind": "Status", "code": 429, "reason": "TooManyRequests"}, status=429,
                                     headers={"Retry-After": self.retry_after})
        if request.path.endswith("/slow"):
            await asyncio.sleep(2)
        if request.path.endswith("/chunked"):
            streamed = web.StreamResponse(headers={"Content-Type": "application/json"})
            streamed.enable_chunked_encoding()
            await streamed.prepare(request)
            for piece in ('{"method": "', request.method, '", "items": [', ", ".join(["1"] * 3000), "]}"):
                await streamed.write(piece.encode())
            await streamed.write_eof()
            return streamed
        if request.path.endswith("/last"):
            last = web.json_response({"method": request.method})
            last.force_close()
            return last
        if request.path.endswith("/close-soon"):
            transport = request.transport
            assert transport is not None

            def close() -> None:
                transport.close()
                self.closed.set()
            asyncio.get_running_loop().call_later(0.05, close)
        return web.json_response({"method": request.method, "path": request.path, "body": await request.text()})

    def kubeconfig_ca(self) -> Path:
        return self._server.files.ca_cert

    def kubeconfig_for(self, path: Path, token: str) -> Path:
        return self._server.write_kubeconfig(path, token)

    def ports(self) -> set[int]:
        return {port for _, _, port in self.hits}

    def stop(self) -> None:
        self._server.stop()


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[Server]:
    made = Server(tmp_path)
    yield made
    made.stop()


def client_of(kubeconfig: Path, sleep: Callable[[float], None] = time.sleep, **settings: object) -> KubeClient:
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.refresh_api_key_hook = None  # it would copy the kubeconfig's settings back before each request
    for name, value in settings.items():
        setattr(configuration, name, value)
    return KubeClient(k8s_client.ApiClient(configuration), transport=Transport(configuration, sleep))


def test_a_thread_keeps_one_connection_and_each_thread_has_its_own(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    for n in range(5):
        assert kube.get(THINGS, f"t{n}", "ns")["path"] == f"/apis/example.com/v1/namespaces/ns/things/t{n}"
    assert len(server.ports()) == 1
    other = threading.Thread(target=lambda: [kube.get(THINGS, "t", "ns") for _ in range(3)])
    other.start()
    other.join()
    assert len(server.ports()) == 2
    # copies of the client (another limiter, another timeout) share the connections
    kube.with_timeout(5).get(THINGS, "t", "ns")
    assert len(server.ports()) == 2


def test_bodies_queries_and_answers_travel_whole(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    answer = kube.patch(THINGS, "t", "ns", {"status": {"note": "ü" * 5000}}, subresource="status", dry_run=True)
    assert answer["method"] == "PATCH" and answer["path"].endswith("/things/t/status")
    assert '"note": "' in answer["body"] and len(answer["body"]) > 5000


def test_a_connection_the_server_closed_while_idle_is_replaced_before_it_is_used(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    kube.request("POST", "/apis/example.com/v1/close-soon", body={})
    assert server.closed.wait(5)
    # a POST may not be sent twice: it goes out on a new connection, once
    kube.request("POST", "/apis/example.com/v1/namespaces/ns/things", body={"metadata": {"name": "t"}})
    posts = [hit for hit in server.hits if hit[1].endswith("/things")]
    assert len(posts) == 1 and len(server.ports()) == 2


def test_a_get_broken_under_way_is_sent_again_on_a_new_connection(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    kube.get(THINGS, "t", "ns")
    server.drop_next = True
    assert kube.get(THINGS, "t", "ns")["method"] == "GET"
    assert [hit[0] for hit in server.hits] == ["GET", "GET", "GET"]
    assert len(server.ports()) == 2


def test_a_post_broken_under_way_is_not_sent_again(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    kube.get(THINGS, "t", "ns")
    server.drop_next = True
    with pytest.raises(ConnectionError):
        kube.create(THINGS, {"metadata": {"name": "t", "namespace": "ns"}})
    assert [hit[0] for hit in server.hits] == ["GET", "POST"]
    # the next request opens a new connection
    assert kube.get(THINGS, "t", "ns")["method"] == "GET"


def test_a_chunked_answer_is_read_whole_and_the_connection_kept(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    for _ in range(2):
        answer = kube.get(THINGS, "chunked", "ns")
        assert answer["method"] == "GET" and answer["items"] == [1] * 3000
    assert len(server.ports()) == 1


def test_an_answer_that_closes_its_connection_leaves_the_next_request_a_new_one(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    assert kube.create(THINGS, {"metadata": {"name": "last", "namespace": "ns"}}, )["method"] == "POST"
    assert kube.request("POST", "/apis/example.com/v1/last", body={})["method"] == "POST"
    assert kube.get(THINGS, "t", "ns")["method"] == "GET"
    assert len(server.ports()) == 2  # no failure, no resend: the second POST went once, on a new one
    assert [hit[0] for hit in server.hits] == ["POST", "POST", "GET"]


def test_closing_the_transport_fails_a_request_under_way_and_not_the_next(server: Server) -> None:
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=configuration)
    configuration.refresh_api_key_hook = None
    transport = Transport(configuration)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    failed: list[BaseException] = []
    idle = transport.request("GET", "/apis/example.com/v1/t", None, headers, 10)  # the main thread's, now idle

    def slow() -> None:
        transport.request("GET", "/apis/example.com/v1/t", None, headers, 10)
        try:  # a GET on a reused connection: one that breaks under it would be sent again, unless closed
            transport.request("GET", "/apis/example.com/v1/slow", None, headers, 10)
        except BaseException as exc:
            failed.append(exc)
        failed.append(AssertionError("then")) if transport.request(
            "GET", "/apis/example.com/v1/t", None, headers, 10)[0] != 200 else None
    waiting = threading.Thread(target=slow)
    waiting.start()
    deadline = time.monotonic() + 5
    while not any(hit[1].endswith("/slow") for hit in server.hits) and time.monotonic() < deadline:
        time.sleep(0.01)
    transport.close()
    waiting.join(10)
    assert idle[0] == 200 and len(failed) == 1 and isinstance(failed[0], OSError), failed
    assert [hit[1] for hit in server.hits].count("/apis/example.com/v1/slow") == 1  # not sent again
    # the idle thread's next request opens a new connection too
    assert transport.request("GET", "/apis/example.com/v1/t", None, headers, 10)[0] == 200
    assert len(server.ports()) == 4


def test_an_answer_later_than_the_timeout_fails_the_request_and_not_the_next(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    with pytest.raises(TimeoutError):
        kube.with_timeout(0.3).get(THINGS, "slow", "ns")
    assert kube.get(THINGS, "t", "ns")["method"] == "GET"


def test_an_error_status_is_an_api_error(server: Server, tmp_path: Path) -> None:
    kube = client_of(server.kubeconfig_for(tmp_path / "wrong.kubeconfig", "wrong-token"))
    with pytest.raises(ApiError) as raised:
        kube.get(THINGS, "t", "ns")
    assert raised.value.status == 401 and raised.value.reason == "Unauthorized"


@pytest.mark.parametrize("settings, trusted", [
    ({}, True),  # the certificate names 127.0.0.1
    ({"tls_server_name": "api.stub.svc"}, True),  # SNI and the check on a name the certificate has
    ({"tls_server_name": "elsewhere.example"}, False),
    ({"tls_server_name": "elsewhere.example", "assert_hostname": False}, True),
    ({"ssl_ca_cert": None}, False),  # the system's CAs do not know the stub's
    ({"ssl_ca_cert": None, "verify_ssl": False}, True),
])
def test_the_kubeconfigs_tls_settings_decide_whom_the_client_trusts(server: Server, settings: dict[str, object],
                                                                    trusted: bool) -> None:
    kube = client_of(server.kubeconfig, **settings)
    if trusted:
        assert kube.get(THINGS, "t", "ns")["method"] == "GET"
        return
    with pytest.raises(ssl.SSLCertVerificationError):
        kube.get(THINGS, "t", "ns")
    assert server.hits == []


def test_a_server_url_with_a_path_prefixes_every_request(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    kube.api_client.configuration.host += "/k8s/clusters/c-1"
    kube.get(THINGS, "t", "ns")
    assert server.hits[-1][1] == "/k8s/clusters/c-1/apis/example.com/v1/namespaces/ns/things/t"


@pytest.mark.parametrize("url, host_field", [
    ("https://10.0.0.1:6443", "10.0.0.1:6443"),
    ("https://api.example:443", "api.example"),  # the port its scheme implies is left out
    ("https://api.example", "api.example"),
    ("http://api.example:80/prefix", "api.example"),
    ("http://api.example:8080", "api.example:8080"),
    ("https://[fd00::1]:6443", "[fd00::1]:6443"),  # an IPv6 address keeps its brackets
    ("https://[::1]", "[::1]"),
])
def test_the_host_field_names_the_server_as_its_url_does(url: str, host_field: str) -> None:
    configuration = k8s_client.Configuration()
    configuration.host = url
    assert Endpoint.of(configuration).host_field == host_field


@pytest.mark.parametrize("proxy, no_proxy, kept_alive", [
    (None, None, True),
    ("http://proxy.example:3128", None, False),  # through urllib3's ProxyManager, CONNECT and all
    ("http://proxy.example:3128", "127.0.0.1", True),  # the API server is not proxied
    ("socks5://proxy.example:1080", "10.0.0.0/8", False),
])
def test_a_proxied_api_server_is_left_to_urllib3(proxy: str | None, no_proxy: str | None, kept_alive: bool) -> None:
    configuration = k8s_client.Configuration()
    configuration.host = "https://127.0.0.1:6443"
    configuration.proxy, configuration.no_proxy = proxy, no_proxy
    assert serves(configuration) is kept_alive


def test_a_forked_child_opens_its_own_connection_and_leaves_its_parents_alone(server: Server) -> None:
    kube = client_of(server.kubeconfig)
    kube.get(THINGS, "parent", "ns")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: one request, then out without pytest's teardown
        code = 1
        try:
            kube.get(THINGS, "child", "ns")
            code = 0
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    assert os.read(read, 1) == b"\x00"
    os.waitpid(child, 0)
    kube.get(THINGS, "parent", "ns")
    ports: dict[str, set[int]] = {}  # by the name asked for
    for _, path, port in server.hits:
        ports.setdefault(path.rsplit("/", 1)[-1], set()).add(port)
    assert len(ports["parent"]) == 1 and ports["child"].isdisjoint(ports["parent"]), server.hits


@pytest.mark.parametrize("busy, retry_after, waited, answered", [
    (1, "1", [1.0], True),
    (2, "3600", [MAX_RETRY_AFTER] * 2, True),  # a wait asked for is bounded
    (RETRIES_AFTER + 1, "1", [1.0] * RETRIES_AFTER, False),  # and so is the number of waits
    (1, "Wed, 21 Oct 2026 07:28:00 GMT", [], False),  # a date is not waited for
])
def test_a_get_the_server_turns_away_for_now_is_sent_again_after_the_wait_it_asks_for(
        server: Server, busy: int, retry_after: str, waited: list[float], answered: bool) -> None:
    slept: list[float] = []
    kube = client_of(server.kubeconfig, sleep=slept.append)
    server.busy, server.retry_after = busy, retry_after
    if answered:
        assert kube.get(THINGS, "busy", "ns")["method"] == "GET"
    else:
        with pytest.raises(ApiError) as raised:
            kube.get(THINGS, "busy", "ns")
        assert raised.value.status == 429
    assert slept == waited


def test_a_post_the_server_turns_away_is_the_callers_to_send_again(server: Server) -> None:
    slept: list[float] = []
    kube = client_of(server.kubeconfig, sleep=slept.append)
    server.busy = 1
    with pytest.raises(ApiError) as raised:
        kube.request("POST", "/apis/example.com/v1/busy", body={})
    assert raised.value.status == 429 and slept == []


def test_a_ca_file_rewritten_in_place_is_read_again_for_the_next_connection(server: Server, tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    other = TlsStub(web.Application, tmp_path / "other-pki", "other", "stub", "other stub")
    try:
        ca.write_bytes(other.files.ca_cert.read_bytes())  # a CA that did not sign the server's certificate
    finally:
        other.stop()
    kube = client_of(server.kubeconfig, ssl_ca_cert=str(ca))
    with pytest.raises(ssl.SSLCertVerificationError):
        kube.get(THINGS, "t", "ns")
    ca.write_bytes(Path(server.kubeconfig_ca()).read_bytes())  # rotated to the right one, same path
    assert kube.get(THINGS, "t", "ns")["method"] == "GET"


def test_bytes_past_an_answers_framing_never_become_the_next_answer() -> None:
    """A server (or a proxy before it) that sends more than its framing says: the transport drops
    the connection, and the next request gets its own answer on a new one."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        for n in range(2):
            conn, _ = listener.accept()
            accepted.append(n)
            with conn:
                conn.recv(65536)
                conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'
                             b'HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{"stray": true}')
                conn.recv(65536)  # until the client closes its end
    threading.Thread(target=serve, daemon=True).start()
    configuration = k8s_client.Configuration()
    configuration.host = f"http://127.0.0.1:{listener.getsockname()[1]}"
    transport = Transport(configuration)
    try:
        assert [transport.request("GET", "/a", None, {}, 5)[1] for _ in range(2)] == [b"{}", b"{}"]
        assert accepted == [0, 1]
    finally:
        transport.close()
        listener.close()
