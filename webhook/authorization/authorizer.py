"""The authorization step of `/validate`: the rules' questions, answered through a cache.

`authorize_reply` runs after the validating rules allowed a request: it asks the pure rules
which questions the review raises (webhook/rules/authorization.py), answers each from the cache
or, on a miss, with the reviewer (discovery + one SubjectAccessReview), and lets the rules judge.
A review thus costs at most one SubjectAccessReview per distinct component kind (and per kind for
the controller identity, when one is configured), and none when every answer is cached.

All of a review's questions share one time budget, well inside the webhook's own timeout, so the
user gets our clear denial instead of the API server's timeout. Answers that came from no
authorizer (errors, timeouts) are never cached.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping, Protocol

from prometheus_client import CollectorRegistry, Counter

from batchgate.clock import Clock
from batchgate.policy import Policy
from webhook.authorization.cache import ANSWER_TTL, TTLCache
from webhook.rules.authorization import AccessAnswer, AccessQuestion, access_plan, access_verdict
from webhook.rules.review import AdmissionRequest, Verdict
from webhook.serving.admission_review import Reply
from webhook.serving.gateway import Decision

log = logging.getLogger("batchgate.webhook.authorization")

ANSWER_CACHE_SIZE = 4096
"""Answers kept per worker (distinct user, groups, kind, namespace)."""
BUDGET = 2.0
"""Seconds all SubjectAccessReviews of one review may take together (webhooks time out at 5 s)."""
NO_API = ("the gateway runs without an API server connection (start it with --kubeconfig, "
          "--policy-configmap, or in a cluster), so it cannot authorize components; "
          "set authorization.userRBACCheck: false to accept AppWrappers without this check")


class Reviewer(Protocol):
    def answer(self, question: AccessQuestion, timeout: float) -> AccessAnswer: ...


class AuthorizationMetrics:
    """Cache hits and misses, and the SubjectAccessReviews sent, by whom they asked about and how
    they came out (every label from a small fixed set)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.cache = Counter("batchgate_authorization_cache_total",
                             "Authorization questions answered from the cache (hit) or not (miss).",
                             ["result"], registry=registry)
        self.reviews = Counter("batchgate_subject_access_reviews_total",
                               "SubjectAccessReviews asked on cache misses, by subject (user or controller) "
                               "and outcome (allowed, denied, unserved, unavailable).",
                               ["subject", "outcome"], registry=registry)


@dataclass
class Authorizer:
    """Answers questions for one worker; `reviewer` None means no API server to ask."""

    reviewer: Reviewer | None
    clock: Clock
    metrics: AuthorizationMetrics
    ttl: float = ANSWER_TTL
    size: int = ANSWER_CACHE_SIZE
    budget: float = BUDGET

    def __post_init__(self) -> None:
        self.cache: TTLCache[AccessQuestion, AccessAnswer] = TTLCache(self.clock, self.ttl, self.size)

    def answers(self, questions: tuple[AccessQuestion, ...]) -> dict[AccessQuestion, AccessAnswer]:
        deadline = self.clock.monotonic() + self.budget
        out: dict[AccessQuestion, AccessAnswer] = {}
        for question in questions:
            cached = self.cache.get(question)
            self.metrics.cache.labels("miss" if cached is None else "hit").inc()
            if cached is not None:
                out[question] = cached
                continue
            out[question] = answer = self._ask(question, deadline - self.clock.monotonic())
            if answer.outcome != "unavailable":
                self.cache.put(question, answer)
        return out

    def _ask(self, question: AccessQuestion, remaining: float) -> AccessAnswer:
        if self.reviewer is None:
            return AccessAnswer("unavailable", reason=NO_API)
        if remaining <= 0:
            answer = AccessAnswer("unavailable", reason=f"the {self.budget:g} s authorization budget ran out")
        else:
            answer = self.reviewer.answer(question, remaining)
        self.metrics.reviews.labels(question.role, answer.outcome).inc()
        return answer


NamespaceLabels = Mapping[str, Mapping[str, str]]


def authorize(request: AdmissionRequest, policy: Policy, namespace_labels: NamespaceLabels | None,
              authorizer: Authorizer) -> Verdict | None:
    """The authorization denial of a request the validating rules allowed, or None."""
    plan = access_plan(request, policy, namespace_labels)
    if plan is None:
        return None
    verdict = access_verdict(plan, authorizer.answers(plan.questions))
    return None if verdict.allowed else verdict


def authorized_reply(decision: Decision, request: AdmissionRequest, policy: Policy,
                     namespace_labels: NamespaceLabels | None, authorizer: Authorizer) -> Decision:
    """`/validate`'s decision with the authorization step: a request the rules allowed may still
    be denied here. A bug here denies (500, logged), as a rule bug does."""
    if not decision.reply.allowed:
        return decision
    try:
        verdict = authorize(request, policy, namespace_labels, authorizer)
    except Exception:  # noqa: BLE001 - a bug must not take the worker down, nor allow
        log.exception("authorization failed on request %s", request.uid)
        return Decision(Reply(request.uid, allowed=False, code=500, reason="InternalError",
                              message=f"the authorization step failed on this request (logged under uid {request.uid})"))
    if verdict is None:
        return decision
    return Decision(Reply(request.uid, allowed=False, code=verdict.code, reason=verdict.reason,
                          message=verdict.message, warnings=decision.reply.warnings))
