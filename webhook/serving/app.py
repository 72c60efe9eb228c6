"""The gateway's WSGI app: AdmissionReview endpoints in front, flask for probes, metrics and errors.

`create_app(context)` builds one app per worker from a `GatewayContext`, so tests build a fresh
app with a FakeClock and a store of their choosing. A POST to /mutate or /validate is answered by
`ReviewEndpoints` straight from the WSGI environ, without flask's request context, routing and
response objects (a quarter of the app's CPU per review, measured in docs/webhook.md); everything
else goes to flask. Either way the handlers do I/O only: read the body, hand it to the pure parsing
and rules, write the reply, the audit line and the metrics.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from flask import Blueprint, Flask, Response, current_app
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wsgi import get_content_length, get_input_stream

from batchgate.clock import Clock, SystemClock
from batchgate.policy import DEFAULT_POLICY_CONFIGMAP
from webhook.serving.admission_review import MAX_BODY_BYTES, MalformedReview, Reply, decode_json, malformed_body, parse_review
from webhook.serving.audit import AuditLog, audit_record
from webhook.serving.gateway import Decision, mutate_reply, validate_reply
from webhook.serving.metrics import GatewayMetrics, kind_label
from webhook.authorization.authorizer import AuthorizationMetrics, Authorizer, Reviewer, authorized_reply
from webhook.authorization.cache import ANSWER_TTL
from webhook.policy.store import LoadedPolicy, PolicyStore
from webhook.rules.review import AdmissionRequest

JSON = "application/json"
log = logging.getLogger("batchgate.webhook")


@dataclass
class GatewayContext:
    """Everything a worker's views need; kept in `app.extensions["batchgate"]`."""

    store: PolicyStore
    audit: AuditLog
    clock: Clock = field(default_factory=SystemClock)
    metrics: GatewayMetrics = field(default_factory=GatewayMetrics)
    policy_configmap: tuple[str, str] = DEFAULT_POLICY_CONFIGMAP
    reviewer: Reviewer | None = None
    """Asks the API server the per-component authorization questions; None when the gateway has
    no API server to ask, and then what needs an answer is denied (fail closed)."""
    authorization_ttl: float = ANSWER_TTL
    """Seconds an authorization answer is reused (0: every review asks again)."""
    authorizer: Authorizer = field(init=False)

    def __post_init__(self) -> None:
        self.authorizer = Authorizer(self.reviewer, self.clock, AuthorizationMetrics(self.metrics.registry),
                                     ttl=self.authorization_ttl)
        # Wired before any reloader starts, so the very first load is counted too.
        self.store.on_loaded = lambda loaded: self.metrics.policy_loads.labels(loaded.source).inc()
        self.store.on_rejected = lambda source, error: self.metrics.policy_errors.labels(source).inc()


bp = Blueprint("admission", __name__)


def _context() -> GatewayContext:
    return current_app.extensions["batchgate"]


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status=status, mimetype=JSON, headers=headers)


def _read_body(environ: dict[str, Any]) -> bytes:
    """The body, or MalformedReview when it is over the limit. What the client still sends is
    not read here: the reply closes the connection, and the worker reads and drops the rest
    without a thread (webhook/serving/readahead.py), so the client gets our 400, not a reset."""
    body: bytes = get_input_stream(environ).read(MAX_BODY_BYTES + 1)
    if len(body) <= MAX_BODY_BYTES:
        return body
    length = get_content_length(environ)
    size = f"{length} bytes" if length else f"over {MAX_BODY_BYTES} bytes"
    raise MalformedReview(f"request body is {size}, over the limit of {MAX_BODY_BYTES}")


Decide = Callable[[AdmissionRequest, LoadedPolicy, GatewayContext], Decision]
Answer = tuple[int, dict[str, Any], bool]
"""HTTP status, JSON body, and whether the connection is closed after it."""


def _answer(ctx: GatewayContext, endpoint: str, decide: Decide, environ: dict[str, Any]) -> Answer:
    started = ctx.clock.monotonic()
    loaded = ctx.store.current
    if loaded is None:
        return 503, {**malformed_body("no policy loaded yet"), "code": 503, "reason": "ServiceUnavailable"}, False
    review_request: AdmissionRequest | None = None
    partial: dict[str, Any] = {}
    try:
        review_request = parse_review(decode_json(_read_body(environ)))
    except MalformedReview as exc:
        reply, partial = Reply(exc.uid or "", allowed=False, code=400, reason="BadRequest", message=exc.message), exc.partial
    else:
        reply = decide(review_request, loaded, ctx).reply
    elapsed = ctx.clock.monotonic() - started
    kind = kind_label(review_request.kind.qualified, loaded.policy) if review_request else ""
    operation = review_request.operation if review_request else partial.get("operation", "")
    ctx.metrics.reviews.labels(endpoint, kind, operation, str(reply.allowed).lower(), str(reply.code),
                               reply.reason).inc()
    ctx.metrics.latency.labels(endpoint).observe(elapsed)
    if not ctx.audit.write(audit_record(now=ctx.clock.now(), endpoint=endpoint, reply=reply, request=review_request,
                                        partial=partial, policy_version=loaded.version, duration_ms=elapsed * 1000)):
        ctx.metrics.audit_errors.inc()
    if reply.uid:
        return 200, reply.to_review(), False
    # Nothing to echo: a plain 400, and the connection is closed (its stream may be unusable).
    return 400, malformed_body(reply.message), True


def _mutate(req: AdmissionRequest, loaded: LoadedPolicy, ctx: GatewayContext) -> Decision:
    return mutate_reply(req, loaded.policy, ctx.store.namespace_labels)


def _validate(req: AdmissionRequest, loaded: LoadedPolicy, ctx: GatewayContext) -> Decision:
    return authorized_reply(validate_reply(req, loaded.policy, ctx.store.namespace_labels, ctx.policy_configmap),
                            req, loaded.policy, ctx.store.namespace_labels, ctx.authorizer)


REVIEW_PATHS: dict[str, tuple[str, Decide]] = {"/mutate": ("mutate", _mutate), "/validate": ("validate", _validate)}


WSGIApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


@dataclass
class ReviewEndpoints:
    """WSGI: POST /mutate and /validate answered here, every other request passed to `fallback`
    (flask). Another method on a review path gets flask's 405, as JSON."""

    context: GatewayContext
    fallback: WSGIApp

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        route = REVIEW_PATHS.get(environ.get("PATH_INFO", ""))
        if route is None:
            return self.fallback(environ, start_response)
        if environ.get("REQUEST_METHOD") != "POST":
            return _error_body(MethodNotAllowed(), environ, start_response)
        try:
            status, body, close = _answer(self.context, route[0], route[1], environ)
        except Exception:  # noqa: BLE001 - as flask would: logged, and a JSON 500
            log.exception("Exception on %s [POST]", environ.get("PATH_INFO"))
            return _error_body(InternalServerError(), environ, start_response)
        data = json.dumps(body, separators=(",", ":")).encode()
        headers = [("Content-Type", JSON), ("Content-Length", str(len(data)))]
        if close:
            headers.insert(0, ("Connection", "close"))
        start_response(f"{status} {HTTP_STATUS_CODES[status].upper()}", headers)
        return [data]


def _error_body(exc: HTTPException, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    response: Iterable[bytes] = _http_error(exc)(environ, start_response)
    return response


@bp.get("/healthz")
def healthz() -> Response:
    return _json({"status": "ok"})


@bp.get("/readyz")
def readyz() -> Response:
    store = _context().store
    loaded = store.current
    if loaded is None:
        return _json({"ready": False, "error": store.last_error or "no policy loaded yet"}, 503)
    if not store.ready:
        return _json({"ready": False, "error": store.last_error, "policyVersion": loaded.version,
                      "source": loaded.source}, 503)
    body = {"ready": True, "policyVersion": loaded.version, "source": loaded.source}
    if store.last_error:
        body["lastError"] = store.last_error
    return _json(body)


@bp.get("/metrics")
def metrics() -> Response:
    text, content_type = _context().metrics.render()
    return Response(text, content_type=content_type)


def _http_error(exc: HTTPException) -> Response:
    """Flask's own errors (404, 405, ...) as JSON Status bodies instead of HTML."""
    code = exc.code or 400
    return _json({**malformed_body(exc.description or exc.name), "code": code, "reason": exc.name.replace(" ", "")}, code)


def create_app(context: GatewayContext) -> Flask:
    """One gateway app serving the given context."""
    app = Flask(__name__)
    app.extensions["batchgate"] = context
    app.register_blueprint(bp)
    app.register_error_handler(HTTPException, _http_error)
    app.wsgi_app = ReviewEndpoints(context, app.wsgi_app)  # type: ignore[method-assign]
    return app
