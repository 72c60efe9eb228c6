"""The authorizer's bookkeeping: cache hits, what is never cached, the shared time budget.

The reviewer here is a table that takes a set time per answer on a FakeClock; the real one
(discovery + SubjectAccessReview over HTTPS) is tested in test_kube.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry

from batchgate.clock import FakeClock
from webhook.authorization.authorizer import NO_API, AuthorizationMetrics, Authorizer
from webhook.rules.authorization import AccessAnswer, AccessQuestion, Subject
from webhook.rules.review import GroupVersionKind

ALICE = Subject("alice", "1001", ("system:authenticated",))
SECRET = AccessQuestion("user", ALICE, GroupVersionKind("", "v1", "Secret"), "team-a")
JOB = AccessQuestion("user", ALICE, GroupVersionKind("batch", "v1", "Job"), "team-a")


@dataclass
class TableReviewer:
    clock: FakeClock
    answers: dict[AccessQuestion, AccessAnswer]
    seconds: float = 0.1
    asked: list[AccessQuestion] = field(default_factory=list)

    def answer(self, question: AccessQuestion, timeout: float) -> AccessAnswer:
        self.asked.append(question)
        self.clock.advance(min(self.seconds, timeout))
        if self.seconds > timeout:
            return AccessAnswer("unavailable", reason="timed out")
        return self.answers[question]


def authorizer(reviewer: TableReviewer | None, clock: FakeClock) -> Authorizer:
    return Authorizer(reviewer, clock, AuthorizationMetrics(CollectorRegistry()))


def test_a_cached_answer_is_not_asked_again_until_it_expires() -> None:
    clock = FakeClock()
    reviewer = TableReviewer(clock, {SECRET: AccessAnswer("denied", "secrets"), JOB: AccessAnswer("allowed", "jobs")})
    auth = authorizer(reviewer, clock)
    first = auth.answers((SECRET, JOB))
    assert auth.answers((SECRET, JOB)) == first
    assert reviewer.asked == [SECRET, JOB]
    clock.advance(auth.ttl)
    auth.answers((SECRET,))
    assert reviewer.asked == [SECRET, JOB, SECRET]


def test_an_unanswered_question_is_asked_again_next_time() -> None:
    clock = FakeClock()
    reviewer = TableReviewer(clock, {SECRET: AccessAnswer("unavailable", reason="HTTP 500")})
    auth = authorizer(reviewer, clock)
    auth.answers((SECRET,))
    auth.answers((SECRET,))
    assert reviewer.asked == [SECRET, SECRET]


@pytest.mark.parametrize(
    ("seconds", "outcomes", "asked"),
    [
        pytest.param(0.5, ["allowed", "allowed"], 2, id="answers within the budget all count"),
        pytest.param(1.5, ["allowed", "unavailable"], 2, id="the second question gets only what is left"),
        pytest.param(2.5, ["unavailable", "unavailable"], 1, id="nothing is asked once the budget is spent"),
    ],
)
def test_all_questions_of_a_review_share_one_budget(seconds: float, outcomes: list[str], asked: int) -> None:
    clock = FakeClock()
    reviewer = TableReviewer(clock, {SECRET: AccessAnswer("allowed", "secrets"), JOB: AccessAnswer("allowed", "jobs")},
                             seconds=seconds)
    answers = authorizer(reviewer, clock).answers((SECRET, JOB))
    assert [answers[q].outcome for q in (SECRET, JOB)] == outcomes
    assert len(reviewer.asked) == asked


def test_without_an_api_server_every_question_is_unanswered_saying_why() -> None:
    answers = authorizer(None, FakeClock()).answers((SECRET,))
    assert answers[SECRET] == AccessAnswer("unavailable", reason=NO_API)
