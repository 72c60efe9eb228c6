"""The API server answers: discovery for a kind's resource, a SubjectAccessReview for the access.

A thin adapter over `kubeapi.client.KubeClient` on a kubernetes client connection (with
webhook/policy/reloader.py, the only gateway modules that import the kubernetes client). Everything it cannot get an answer for is `unavailable` with what went
wrong, never `allowed`; a group/version or kind the API server does not serve is `unserved`.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from kubernetes import client

from batchgate.clock import Clock, SystemClock
from kubeapi.client import ApiError, KubeClient
from webhook.authorization.cache import TTLCache
from webhook.rules.authorization import AccessAnswer, AccessQuestion
from webhook.policy.reloader import api_client
from webhook.rules.review import GroupVersionKind

log = logging.getLogger("batchgate.webhook.authorization")

DISCOVERY_TTL = 300.0
"""Seconds a kind's resource name is kept: it only changes when a CRD is replaced."""
DISCOVERY_SIZE = 512
NOT_FOUND = 404


def connected_reviewer(kubeconfig: str | None) -> "KubeAccessReviewer | None":
    """A reviewer over the kubeconfig (else in-cluster, else ~/.kube/config), or None (logged)
    when none of them can be loaded."""
    try:
        api = api_client(kubeconfig)
    except Exception as exc:  # noqa: BLE001 - any kubeconfig problem: no API server to ask
        log.error("no API server connection for authorization SubjectAccessReviews: %s", exc)
        return None
    return KubeAccessReviewer(api, SystemClock())


class Unanswered(Exception):
    """No answer came: the API server failed, refused or timed out."""


class KubeAccessReviewer:
    """Asks the API server one question: discovery (cached), then one SubjectAccessReview, both as
    plain JSON through `KubeClient` (the generated typed API cost about 2 ms of CPU a review)."""

    def __init__(self, api: client.ApiClient, clock: Clock) -> None:
        self.client = KubeClient(api)
        self.resources: TTLCache[GroupVersionKind, str] = TTLCache(clock, DISCOVERY_TTL, DISCOVERY_SIZE)

    def answer(self, question: AccessQuestion, timeout: float) -> AccessAnswer:
        try:
            resource = self.resource_for(question.kind, timeout)
            if resource is None:
                return AccessAnswer("unserved")
            return self.review(question, resource, timeout)
        except Unanswered as exc:
            return AccessAnswer("unavailable", reason=str(exc))

    def resource_for(self, kind: GroupVersionKind, timeout: float) -> str | None:
        """The plural the API server serves `kind` as, or None when it serves no such kind."""
        known = self.resources.get(kind)
        if known is not None:
            return known
        path = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
        try:
            body = self.client.with_timeout(float(timeout)).request("GET", path)
        except ApiError as exc:
            if exc.status == NOT_FOUND:
                return None
            raise Unanswered(f"discovery of {kind.api_version} failed: {_status(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - timeouts and connection errors of every kind
            raise Unanswered(f"discovery of {kind.api_version} failed: {_describe(exc)}") from None
        for entry in body.get("resources") or []:
            name = entry.get("name", "")
            if entry.get("kind") == kind.kind and "/" not in name:  # not a subresource
                self.resources.put(kind, name)
                return name
        return None

    def review(self, question: AccessQuestion, resource: str, timeout: float) -> AccessAnswer:
        """One SubjectAccessReview (authorization.k8s.io/v1) of the question."""
        try:
            reply = self.client.with_timeout(float(timeout)).request(
                "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body=subject_access_review(question, resource))
        except ApiError as exc:
            raise Unanswered(f"SubjectAccessReview failed: {_status(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - timeouts and connection errors of every kind
            raise Unanswered(f"SubjectAccessReview failed: {_describe(exc)}") from None
        status = reply.get("status") or {}
        said = "; ".join(filter(None, (status.get("reason"), status.get("evaluationError"))))
        return AccessAnswer("allowed" if status.get("allowed") is True else "denied", resource, said)


def subject_access_review(question: AccessQuestion, resource: str) -> dict[str, Any]:
    """The SubjectAccessReview asking the question about `resource` (the wire form)."""
    subject = question.subject
    spec: dict[str, Any] = {
        "user": subject.username,
        "groups": list(subject.groups),
        "resourceAttributes": {"namespace": question.namespace, "verb": question.verb, "group": question.kind.group,
                               "version": question.kind.version, "resource": resource},
    }
    if subject.uid:
        spec["uid"] = subject.uid
    if subject.extra:
        spec["extra"] = {key: list(values) for key, values in subject.extra}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def _status(exc: ApiError) -> str:
    """`HTTP 500 Internal Server Error: <the server's message>`."""
    try:
        phrase = HTTPStatus(exc.status).phrase
    except ValueError:
        phrase = exc.reason
    message = exc.message if exc.body else ""
    return f"HTTP {exc.status} {phrase}" + (f": {message}" if message else "")


def _describe(exc: Exception) -> str:
    text = str(exc)
    if "timed out" in text.lower() or "timeout" in type(exc).__name__.lower():
        return "timed out"
    return f"{type(exc).__name__}: {text}"[:300]
