"""The SubjectAccessReview adapter over real HTTPS, with the real kubernetes client, against a
server that answers discovery and SubjectAccessReviews from a table (tests/webhook/authorizer_stub.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchgate.clock import FakeClock
from tests.webhook.authorizer_stub import AuthorizerStub
from webhook.authorization.kube import KubeAccessReviewer
from webhook.policy.reloader import api_client
from webhook.rules.authorization import AccessQuestion, Subject
from webhook.rules.review import GroupVersionKind

ALICE = Subject("alice", "1001", ("system:authenticated", "team-a"), (("scopes", ("x",)),))
SECRET = GroupVersionKind("", "v1", "Secret")
JOB = GroupVersionKind("batch", "v1", "Job")
UNSERVED_GROUP = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
UNSERVED_KIND = GroupVersionKind("batch", "v1", "CronJob")


def ask(stub: AuthorizerStub, kind: GroupVersionKind, timeout: float = 5.0):
    reviewer = KubeAccessReviewer(api_client(str(stub.kubeconfig)), FakeClock())
    return reviewer.answer(AccessQuestion("user", ALICE, kind, "team-a"), timeout)


@pytest.mark.parametrize(
    ("grants", "mode", "kind", "outcome", "resource", "reason"),
    [
        pytest.param({("alice", "batch", "jobs", "team-a")}, "ok", JOB, "allowed", "jobs", "RBAC: allowed by",
                     id="a granted kind is allowed, with the authorizer's reason"),
        pytest.param({("team-a", "", "secrets", "team-a")}, "ok", SECRET, "allowed", "secrets", "RBAC: allowed by",
                     id="a grant to one of the user's groups counts"),
        pytest.param({("alice", "", "secrets", "team-b")}, "ok", SECRET, "denied", "secrets", "",
                     id="a grant in another namespace does not count"),
        pytest.param(set(), "ok", UNSERVED_GROUP, "unserved", "", "", id="a group the server does not serve is unserved"),
        pytest.param(set(), "ok", UNSERVED_KIND, "unserved", "", "", id="a kind missing from its group is unserved"),
        pytest.param(set(), "missing", SECRET, "unavailable", "", "HTTP 404",
                     id="a server without SubjectAccessReview leaves the question unanswered"),
        pytest.param(set(), "error", SECRET, "unavailable", "", "HTTP 500 Internal Server Error: etcdserver",
                     id="a server error leaves the question unanswered, quoting the server"),
    ],
)
def test_answers(tmp_path: Path, grants, mode, kind, outcome, resource, reason) -> None:
    with AuthorizerStub(tmp_path, grants=grants, mode=mode) as stub:
        answer = ask(stub, kind)
    assert (answer.outcome, answer.resource) == (outcome, resource)
    assert reason in answer.reason


def test_a_slow_authorizer_times_out_unanswered(tmp_path: Path) -> None:
    with AuthorizerStub(tmp_path, mode="slow", delay=3.0) as stub:
        answer = ask(stub, SECRET, timeout=0.5)
    assert (answer.outcome, answer.reason) == ("unavailable", "SubjectAccessReview failed: timed out")


def test_the_review_carries_the_user_uid_groups_extra_and_resource(tmp_path: Path) -> None:
    with AuthorizerStub(tmp_path) as stub:
        ask(stub, JOB)
    assert stub.reviews == [{
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "uid": "1001", "groups": ["system:authenticated", "team-a"],
                 "extra": {"scopes": ["x"]},
                 "resourceAttributes": {"namespace": "team-a", "verb": "create", "group": "batch", "version": "v1",
                                        "resource": "jobs"}},
    }]


def test_discovery_is_asked_once_per_kind(tmp_path: Path) -> None:
    with AuthorizerStub(tmp_path) as stub:
        reviewer = KubeAccessReviewer(api_client(str(stub.kubeconfig)), FakeClock())
        for _ in range(3):
            reviewer.answer(AccessQuestion("user", ALICE, JOB, "team-a"), 5.0)
    assert stub.paths.count("/apis/batch/v1") == 1
    assert len(stub.reviews) == 3  # the reviewer itself does not cache answers: the Authorizer does
