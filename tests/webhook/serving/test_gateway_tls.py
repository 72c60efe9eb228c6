"""The real thing: `batchgate webhook` under gunicorn (2 workers) over TLS, spoken to over HTTPS
with clients that verify our CA, as the API server would.

We test these aspects: every sample (the demo's, and upstream's where present) from two users, keep-alive, hostile bodies that must
not crash a worker, audit lines from both workers, and metrics summed across both workers.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import ssl
from pathlib import Path
from typing import Any, Iterator

import jsonpatch
import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from tests.builders import sample, samples
from tests.upstream_corpus import corpus_manifests, upstream
from tests.webhook.helpers import ALICE, BOB, booted_workers, hostile_reviews, review_for, with_all_workers
from webhook import rules
from webhook.serving.admission_review import parse_review
from webhook.serving.launch import RunningGateway, start_gateway
from webhook.policy.store import DEFAULTS


def two_workers(tmp: Path) -> Iterator[tuple[RunningGateway, Path]]:
    certs = tmp / "certs"
    write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    audit = tmp / "audit.log"
    args = ("--workers", "2", "--threads", "2", "--audit-log", str(audit))
    gateway = with_all_workers(start_gateway(certs, *args), args)
    yield gateway, audit
    gateway.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningGateway, Path]]:
    yield from two_workers(tmp_path_factory.mktemp("gateway"))


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[RunningGateway, Path]]:
    """A gateway of its own, for a test that counts every audit line and metric since start."""
    yield from two_workers(tmp_path)


@pytest.fixture(scope="module")
def session(served: tuple[RunningGateway, Path]) -> Iterator[requests.Session]:
    s = requests.Session()
    s.verify = str(served[0].cert_dir / "ca.crt")
    s.trust_env = False  # REQUESTS_CA_BUNDLE in the environment would override verify
    yield s
    s.close()


def url(gateway: RunningGateway, path: str) -> str:
    return f"https://{gateway.host}:{gateway.port}{path}"


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def upstream_objects() -> list[tuple[str, dict[str, Any]]]:
    return [(name, obj) for name, _, obj in corpus_manifests()]


@pytest.mark.parametrize("objects", [pytest.param(samples, id="the demo's samples"),
                                     pytest.param(upstream_objects, id="upstream's samples", marks=upstream)])
@pytest.mark.parametrize("user", [ALICE, BOB], ids=["alice", "bob"])
def test_every_sample_is_judged_over_verified_tls(served: tuple[RunningGateway, Path], session: requests.Session,
                                                  user: Any, objects: Any) -> None:
    gateway, _ = served
    for source, obj in objects():
        review = review_for(obj, user)
        reply = session.post(url(gateway, "/mutate"), json=review, timeout=10)
        assert reply.status_code == 200 and reply.headers["Content-Type"] == "application/json", source
        response = reply.json()["response"]
        assert response["uid"] == review["request"]["uid"]
        expected = rules.mutate(parse_review(review), DEFAULTS.policy)
        ops = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
        mutated = jsonpatch.apply_patch(obj, ops)
        assert mutated == (expected.object if expected.object is not None else obj), source
        verdict = session.post(url(gateway, "/validate"), json=review_for(mutated, user), timeout=10).json()
        assert "patch" not in verdict["response"]
        if not verdict["response"]["allowed"]:
            status = verdict["response"]["status"]
            assert status["message"]
            # This gateway has no API server: what needs per-component authorization is denied.
            needs_authorization = obj["kind"] == "AppWrapper" and status["reason"] == "AuthorizationUnavailable"
            assert status["code"] == (503 if needs_authorization else 403), (source, status)


def test_one_kept_alive_connection_serves_many_reviews(served: tuple[RunningGateway, Path]) -> None:
    gateway, _ = served
    client = gateway.client()
    body = review_for(sample("alice/appwrapper-pytorchjob.yaml"))
    conn = client._connection()
    for _ in range(25):
        status, reply = client.review("/mutate", body)
        assert status == 200 and reply["response"]["allowed"]
    assert client._conn is conn and conn.sock is not None, "the connection was kept alive throughout"
    client.close()


def test_a_client_that_does_not_trust_our_ca_cannot_talk_to_the_gateway(served: tuple[RunningGateway, Path]) -> None:
    gateway, _ = served
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(url(gateway, "/healthz"), timeout=10, verify=True)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"x" * (10 * 1024 * 1024), "over the limit", id="a 10 MB body"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "nests too deeply", id="JSON nested 100k deep"),
        pytest.param(b"\x00\x01 not json", "not JSON", id="binary junk"),
        pytest.param(json.dumps({"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview",
                                 "request": {"uid": "x"}}).encode(), "expected apiVersion", id="a wrong apiVersion"),
    ],
)
def test_hostile_bodies_get_a_400_and_no_worker_dies(served: tuple[RunningGateway, Path], session: requests.Session,
                                                     body: bytes, message: str) -> None:
    gateway, _ = served
    workers_before = booted_workers(gateway)
    reply = session.post(url(gateway, "/mutate"), data=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert reply.status_code == 400 and message in reply.json()["message"]
    assert session.get(url(gateway, "/healthz"), timeout=10).status_code == 200
    assert booted_workers(gateway) == workers_before == 2, "no worker was restarted"
    assert gateway.process.poll() is None


def test_audit_lines_and_metrics_add_up_across_both_workers(fresh: tuple[RunningGateway, Path]) -> None:
    gateway, audit = fresh
    context = ssl.create_default_context(cafile=str(gateway.cert_dir / "ca.crt"))
    body = json.dumps(review_for(sample("alice/appwrapper-job.yaml"), BOB)).encode()
    before = len(audit_lines(audit)) if audit.exists() else 0
    assert before == 0, "a fresh gateway has audited nothing yet"
    sent, pids = 0, set()
    while sent < 200 and (sent < 40 or len(pids) < 2):
        conn = http.client.HTTPSConnection(gateway.host, gateway.port, context=context, timeout=10)
        conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        assert conn.getresponse().status == 200
        conn.close()
        sent += 1
        pids = {line["pid"] for line in audit_lines(audit)[before:]}
    lines = audit_lines(audit)
    assert len(lines) == sent, f"{len(lines)} audit lines for {sent} reviews"
    assert len(pids) == 2, f"fresh connections were spread over both workers, got pids {sorted(pids)}"
    for line in lines[before:]:
        assert line["user"] == "bob" and line["kind"] == "workload.codeflare.dev/v1beta2/AppWrapper"
    total = sum(1 for line in lines if line["endpoint"] == "mutate")
    metrics = requests.get(url(gateway, "/metrics"), verify=str(gateway.cert_dir / "ca.crt"), timeout=10).text
    counted = sum(float(m) for m in re.findall(r'^batchgate_webhook_reviews_total\{[^}]*endpoint="mutate"[^}]*\} (\S+)$',
                                               metrics, re.M))
    assert counted == total == sent, f"{counted} reviews in /metrics, {total} audited, {sent} sent: every worker's " \
        "reviews are in /metrics, whichever worker answers it"


@settings(max_examples=40, deadline=None)
@given(review=hostile_reviews(), path=st.sampled_from(["/mutate", "/validate"]))
def test_hostile_reviews_over_tls_get_clear_answers_from_live_workers(served: tuple[RunningGateway, Path],
                                                                      session: requests.Session, review: Any,
                                                                      path: str) -> None:
    gateway, _ = served
    reply = session.post(url(gateway, path), data=json.dumps(review), headers={"Content-Type": "application/json"},
                         timeout=10)
    assert reply.status_code in (200, 400) and reply.headers["Content-Type"] == "application/json"
    if reply.status_code == 200:
        response = reply.json()["response"]
        assert response["allowed"] or response["status"]["code"] in (400, 403), response
    assert booted_workers(gateway) == 2, "no worker died and was replaced"


def test_an_unreadable_body_is_answered_and_its_connection_really_closed(served: tuple[RunningGateway, Path]) -> None:
    gateway, _ = served
    context = ssl.create_default_context(cafile=str(gateway.cert_dir / "ca.crt"))
    raw = socket.create_connection((gateway.host, gateway.port), timeout=10)
    with context.wrap_socket(raw, server_hostname="batchgate-webhook.batchgate-system.svc") as tls:
        body = b"{not json"
        tls.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        received = b""
        while chunk := tls.recv(65536):  # ends only when the server closes (else: timeout, failing)
            received += chunk
    head = received.split(b"\r\n\r\n", 1)[0].decode()
    assert head.startswith("HTTP/1.1 400") and "Connection: close" in head
