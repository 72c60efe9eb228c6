"""The flask app: AdmissionReview endpoints, probes and metrics.

`create_app(context)` builds one app per worker from a `GatewayContext`, so tests build a fresh
app with a FakeClock and a store of their choosing. Views do I/O only: read the body, hand it to
the pure parsing and rules, write the reply, the audit line and the metrics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

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


def _read_body() -> bytes:
    """The body, or MalformedReview when it is over the limit. What the client still sends is
    not read here: the reply closes the connection, and the worker reads and drops the rest
    without a thread (webhook/serving/readahead.py), so the client gets our 400, not a reset."""
    body = request.stream.read(MAX_BODY_BYTES + 1)
    if len(body) <= MAX_BODY_BYTES:
        return body
    size = f"{request.content_length} bytes" if request.content_length else f"over {MAX_BODY_BYTES} bytes"
    raise MalformedReview(f"request body is {size}, over the limit of {MAX_BODY_BYTES}")


def _answer(endpoint: str, decide: Callable[[AdmissionRequest, LoadedPolicy, GatewayContext], Decision]) -> Response:
    ctx = _context()
    started = ctx.clock.monotonic()
    loaded = ctx.store.current
    if loaded is None:
        return _json({**malformed_body("no policy loaded yet"), "code": 503, "reason": "ServiceUnavailable"}, 503)
    review_request: AdmissionRequest | None = None
    partial: dict[str, Any] = {}
    try:
        review_request = parse_review(decode_json(_read_body()))
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
        return _json(reply.to_review())
    # Nothing to echo: a plain 400, and the connection is closed (its stream may be unusable).
    return _json(malformed_body(reply.message), 400, headers={"Connection": "close"})


@bp.post("/mutate")
def mutate() -> Response:
    return _answer("mutate", lambda req, loaded, ctx: mutate_reply(req, loaded.policy, ctx.store.namespace_labels))


@bp.post("/validate")
def validate() -> Response:
    return _answer("validate", lambda req, loaded, ctx: authorized_reply(
        validate_reply(req, loaded.policy, ctx.store.namespace_labels, ctx.policy_configmap),
        req, loaded.policy, ctx.store.namespace_labels, ctx.authorizer))


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
    return app
