"""The dashboard's flask app: pages rendered from the latest digest, and server-sent events.

Each page is a full HTML document that works without script; with script, `dashboard.js` listens
on `/events` and, when the digest's version moves, fetches the page's `?fragment=1` and swaps the
main region in place (no reload, focus kept). Read-only: there is no route that writes.
"""

from __future__ import annotations

import json
from typing import Iterator, Protocol

from flask import Flask, Response, abort, render_template, request

from dashboard.views.digest import Published
from dashboard.views.paging import page_of

KEEPALIVE_SECONDS = 15.0
"""An SSE comment this often keeps proxies from closing a quiet stream and notices gone viewers."""
PAGES = (("overview", "/", "Overview"), ("queues", "/queues", "Cohorts and ClusterQueues"),
         ("workloads", "/workloads", "LocalQueues and pending Workloads"),
         ("appwrappers", "/appwrappers", "AppWrappers"), ("nodes", "/nodes", "Nodes"),
         ("audit", "/audit", "Gateway decisions"))


class Source(Protocol):
    """Where pages get the digest: the watch hub, or a fixed state in rendering tests."""

    @property
    def published(self) -> Published: ...

    def wait_newer(self, version: int, timeout: float) -> Published: ...


def create_app(source: Source) -> Flask:
    app = Flask(__name__)

    def page_number() -> int:
        raw = request.args.get("page", "1")
        if not raw.isdigit():
            abort(400, f"page: want a positive whole number, got {raw[:40]!r}")
        return int(raw)

    def render(template: str, active: str, **data: object) -> str:
        published = source.published
        fragment = request.args.get("fragment") == "1"
        return render_template(template, d=published.digest, version=published.version, pages=PAGES, active=active,
                               layout="fragment.html" if fragment else "base.html", **data)

    @app.get("/")
    def overview() -> str:
        return render("overview.html", "overview")

    @app.get("/queues")
    def queues() -> str:
        return render("queues.html", "queues")

    @app.get("/workloads")
    def workloads() -> str:
        queue = request.args.get("queue") or None
        number = page_number()
        return render("workloads.html", "workloads", queue=queue,
                      page=page_of(source.published.digest.pending_in(queue), number))

    @app.get("/appwrappers")
    def appwrappers() -> str:
        return render("appwrappers.html", "appwrappers", page=page_of(source.published.digest.appwrappers, page_number()))

    @app.get("/appwrappers/<namespace>/<name>")
    def appwrapper(namespace: str, name: str) -> str:
        detail = source.published.digest.appwrapper(namespace, name)
        if detail is None:
            abort(404, f"no AppWrapper {namespace}/{name} is observed (deleted, or not yet seen)")
        return render("appwrapper.html", "appwrappers", aw=detail)

    @app.get("/nodes")
    def nodes() -> str:
        return render("nodes.html", "nodes")

    @app.get("/audit")
    def audit() -> str:
        return render("audit.html", "audit")

    @app.get("/healthz")
    def healthz() -> tuple[str, int, dict[str, str]]:
        """Serving: the pages work even while the API server does not answer (they say stale)."""
        return "ok\n", 200, {"Content-Type": "text/plain"}

    @app.get("/events")
    def events() -> Response:
        last = request.headers.get("Last-Event-ID", "")
        start = int(last) if last.isdigit() else -1

        def stream() -> Iterator[str]:
            version = start
            yield "retry: 2000\n\n"
            while True:
                published = source.wait_newer(version, KEEPALIVE_SECONDS)
                if published.version == version:
                    yield ": keepalive\n\n"
                    continue
                version = published.version
                observed = published.digest.observed
                data = {"version": version, "staleSince": observed.stale_since.isoformat() if observed.stale_since else None}
                yield f"id: {version}\nevent: digest\ndata: {json.dumps(data)}\n\n"

        return Response(stream(), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.errorhandler(400)
    @app.errorhandler(404)
    def client_error(exc: Exception) -> tuple[str, int]:
        code = getattr(exc, "code", 400)
        return render("error.html", "", message=getattr(exc, "description", str(exc)), code=code), code

    return app
