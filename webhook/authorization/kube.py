"""The API server answers: discovery for a kind's resource, a SubjectAccessReview for the access.

A thin adapter over the kubernetes client (with webhook/policy/reloader.py, the only gateway
modules that import it). Everything it cannot get an answer for is `unavailable` with what went
wrong, never `allowed`; a group/version or kind the API server does not serve is `unserved`.
"""

from __future__ import annotations

import json
import logging
from typing import Any, cast

from kubernetes import client
from kubernetes.client.rest import ApiException

from batchgate.clock import Clock, SystemClock
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
    """Asks the API server one question: discovery (cached), then one SubjectAccessReview."""

    def __init__(self, api: client.ApiClient, clock: Clock) -> None:
        self.api = api
        self.authorization = client.AuthorizationV1Api(api)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
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
        try:
            if kind.group:
                listing = self.custom.get_api_resources(kind.group, kind.version, _preload_content=False,
                                                        _request_timeout=float(timeout))
            else:
                listing = self.core.get_api_resources(_preload_content=False, _request_timeout=float(timeout))
            body = json.loads(cast(Any, listing).data)  # _preload_content=False: the raw HTTP response
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return None
            raise Unanswered(f"discovery of {kind.api_version} failed: HTTP {exc.status} {exc.reason}") from None
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
            reply = self.authorization.create_subject_access_review(
                cast(Any, subject_access_review(question, resource)),  # a plain dict is serialized as the model
                _preload_content=False, _request_timeout=float(timeout))
            status = json.loads(cast(Any, reply).data).get("status") or {}  # the raw HTTP response
        except ApiException as exc:
            raise Unanswered(f"SubjectAccessReview failed: HTTP {exc.status} {exc.reason}{_message(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - timeouts and connection errors of every kind
            raise Unanswered(f"SubjectAccessReview failed: {_describe(exc)}") from None
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


def _message(exc: ApiException) -> str:
    try:
        text = json.loads(exc.body or "{}").get("message", "")
    except (ValueError, AttributeError):
        text = ""
    return f": {text}" if text else ""


def _describe(exc: Exception) -> str:
    text = str(exc)
    if "timed out" in text.lower() or "timeout" in type(exc).__name__.lower():
        return "timed out"
    return f"{type(exc).__name__}: {text}"[:300]
