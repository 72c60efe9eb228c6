"""The dashboard's pages rendered from fixed cluster states through the flask app."""

from __future__ import annotations

import datetime as _dt
import html as html_lib
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from dashboard.app import PAGES, create_app
from tests.controller.decisions.trace_builders import T0
from tests.dashboard.states import FixedSource, appwrapper, audit_line, event, observed, pod, team_queues


def get(state: Any, path: str) -> tuple[int, str]:
    client = create_app(FixedSource(state)).test_client()
    response = client.get(path)
    return response.status_code, response.get_data(as_text=True)


def text_of(html: str) -> str:
    """What a reader gets: the text without tags, whitespace folded."""
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


AW_RUNNING = appwrapper("train", phase="Running", resets=2, conditions=[
    {"type": "QuotaReserved", "status": "True", "reason": "AdmittedByKueue", "message": "quota reserved",
     "lastTransitionTime": "2025-01-01T00:00:05Z"}])


@pytest.mark.parametrize("state, path, says", [
    pytest.param(observed([]), "/", ["No AppWrappers observed", "No findings"], id="an empty cluster renders every panel empty"),
    pytest.param(observed(team_queues(admitted_cpu=6)), "/queues",
                 ["ClusterQueue a", "Cohort c", "borrowing", "Nominal", "Used", "Borrowed", "Lendable"],
                 id="a queue above nominal shows its borrowing in words"),
    pytest.param(observed(team_queues(admitted_cpu=6), fair_sharing=True), "/queues", ["Fair-sharing weight", "Weighted share"],
                 id="fair sharing shows each queue's weight and share"),
    pytest.param(observed(team_queues(admitted_cpu=6)), "/queues?fragment=1", ["ClusterQueue a"],
                 id="a fragment is the main region alone"),
    pytest.param(observed(team_queues(pending=2)), "/workloads", ["ta/w00000", "ta/w00001", "Why it waits", "ta/lq"],
                 id="pending workloads are listed with their reason"),
    pytest.param(observed(team_queues(pending=2)), "/workloads?queue=tb/lq", ["Nothing is pending"],
                 id="a LocalQueue's filter shows only its own workloads"),
    pytest.param(observed([AW_RUNNING]), "/appwrappers", ["ns/train", "Running"], id="AppWrappers are listed with phase"),
    pytest.param(observed([AW_RUNNING, pod("train-0", node_name="n1", appwrapper="train"), event("train", "Resuming", "go", 6)]),
                 "/appwrappers/ns/train", ["AppWrapper ns/train", "QuotaReserved", "AdmittedByKueue", "Normal Resuming",
                                           "train-0", "n1", "Job", "train-job"],
                 id="an AppWrapper's page shows conditions, timeline, components and pods with nodes"),
    pytest.param(observed(team_queues()), "/nodes", ["n1", "schedulable", "cordoned (spec.unschedulable)"],
                 id="nodes show GPU allocation and which are cordoned"),
    pytest.param(observed([], audit_lines=(audit_line("alice", "aw", False, code=403),)), "/audit",
                 ["alice", "ns/aw", "denied 403", "no bare Pods"], id="the audit page lists gateway decisions"),
    pytest.param(observed([], audit_problem="no audit log given (batchgate dashboard --audit-log FILE)"), "/audit",
                 ["no audit log given"], id="without an audit log the audit page says how to give one"),
])
def test_page_says(state: Any, path: str, says: list[str]) -> None:
    status, html = get(state, path)
    assert status == 200
    for words in says:
        assert words in text_of(html), words
    assert ("<nav" in html) is ("fragment=1" not in path)


@pytest.mark.parametrize("path, status, says", [
    pytest.param("/workloads?page=abc", 400, "page: want a positive whole number, got 'abc'", id="a bad page number is a 400 that says why"),
    pytest.param("/appwrappers/ns/nope", 404, "no AppWrapper ns/nope is observed", id="an unknown AppWrapper is a 404 that says so"),
    pytest.param("/nope", 404, "not found", id="an unknown page is a 404 page, not a traceback"),
])
def test_bad_input(path: str, status: int, says: str) -> None:
    got, html = get(observed([]), path)
    assert got == status
    assert says in text_of(html).lower() or says in text_of(html)  # werkzeug's own 404 text is capitalised


def test_a_forbidden_kind_blanks_only_the_panels_that_need_it() -> None:
    state = observed(team_queues(pending=1), problems={"Node": "forbidden: your account may not list or watch it"})
    _, nodes = get(state, "/nodes")
    _, queues = get(state, "/queues")
    assert "Cannot read Node: forbidden" in text_of(nodes)
    assert "Cannot read" not in text_of(queues) and "ClusterQueue a" in text_of(queues)


def test_a_stale_view_says_since_when() -> None:
    _, html = get(observed([], stale_since=_dt.datetime(2025, 1, 1, 12, 30, tzinfo=_dt.timezone.utc)), "/")
    assert "Stale: the API server has not answered since 12:30:00 UTC" in text_of(html)


def test_before_the_first_lists_finish_the_page_says_it_is_incomplete() -> None:
    _, html = get(observed([], reading=("Workload", "Pod")), "/")
    assert "Still reading Workload, Pod from the cluster" in text_of(html)


def test_fifteen_thousand_pending_workloads_are_paged_on_the_server() -> None:
    status, html = get(observed(team_queues(pending=250)), "/workloads?page=3")
    assert status == 200
    rows = re.findall(r"<td>ta/w\d+</td>", html)
    assert len(rows) == 50
    assert "Rows 201–250 of 250 (page 3 of 3)" in text_of(html)


class _Landmarks(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize("path", [href for _, href, _ in PAGES], ids=lambda p: f"page {p} is semantic")
def test_every_page_is_semantic_and_every_panel_focusable(path: str) -> None:
    _, html = get(observed([*team_queues(pending=1), AW_RUNNING]), path)
    parser = _Landmarks()
    parser.feed(html)
    tags = [t for t, _ in parser.tags]
    assert {"header", "nav", "main", "h1", "section"} <= set(tags)
    sections = [a for t, a in parser.tags if t == "section"]
    assert all(a.get("tabindex") == "0" and a.get("id") for a in sections)
    assert "http://" not in html and "https://" not in html  # nothing from a CDN


def test_the_event_stream_announces_the_digest_version() -> None:
    client = create_app(FixedSource(observed([]))).test_client()
    response = client.get("/events", buffered=False)
    chunks = iter(response.response)
    first = b"".join(next(chunks) for _ in range(2)).decode()
    response.close()
    assert response.mimetype == "text/event-stream"
    assert "id: 1\nevent: digest\n" in first


def test_static_assets_are_served_from_the_package() -> None:
    client = create_app(FixedSource(observed([]))).test_client()
    assert client.get("/static/dashboard.js").status_code == 200
    assert client.get("/static/dashboard.css").status_code == 200
    assert client.get("/healthz").get_data(as_text=True) == "ok\n"
