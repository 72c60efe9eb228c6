"""Per-component authorization, the pure part: which questions a review raises, and the verdict
the answers make (webhook/rules/authorization.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate.policy import parse_policy
from tests.builders import a_jobset, a_request, a_service, an_appwrapper
from webhook.rules.authorization import AccessAnswer, AccessQuestion, Subject, access_plan, access_verdict
from webhook.rules.review import GroupVersionKind, UserInfo

CONTROLLER = "system:serviceaccount:batchgate-system:batchgate-controller"
WITH_CONTROLLER = parse_policy("exempt: {users: [admin]}\n")  # the default controllers.appWrapper names it
POLICY = parse_policy("exempt: {users: [admin]}\ncontrollers: {appWrapper: []}\n")  # no controller to ask about
USER_CHECK_OFF = parse_policy("authorization: {userRBACCheck: false}\ncontrollers: {appWrapper: []}\n")
SECRET = GroupVersionKind("", "v1", "Secret")
JOB = GroupVersionKind("batch", "v1", "Job")
CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


def a_secret(name: str = "s") -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"k": "v"}}


def a_configmap(name: str = "c") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def wrapping(*templates: dict) -> dict:
    builder = an_appwrapper("aw").with_job()
    for template in templates:
        builder = builder.with_component(template)
    return builder.build()


def kinds_asked(plan) -> list[tuple[str, str]]:
    return [(q.role, q.kind.qualified) for q in plan.questions]


@pytest.mark.parametrize(
    ("obj", "request_args", "policy", "asked"),
    [
        pytest.param(wrapping(a_secret()), {}, POLICY, [("user", "Job.batch"), ("user", "Secret")],
                     id="an AppWrapper of a Job and a Secret raises one question per kind"),
        pytest.param(wrapping(a_secret("a"), a_secret("b"), a_configmap("x"), a_configmap("y")), {}, POLICY,
                     [("user", "Job.batch"), ("user", "Secret"), ("user", "ConfigMap")],
                     id="many components of few kinds raise one question per distinct kind"),
        pytest.param(wrapping(a_secret()), {}, WITH_CONTROLLER,
                     [("user", "Job.batch"), ("user", "Secret"), ("controller", "Job.batch"),
                      ("controller", "Secret")],
                     id="the controller of controllers.appWrapper is asked about every kind too"),
        pytest.param(wrapping(a_secret()), {}, replace(WITH_CONTROLLER, authorization=replace(
                     WITH_CONTROLLER.authorization, user_rbac_check=False)),
                     [("controller", "Job.batch"), ("controller", "Secret")],
                     id="userRBACCheck off still asks about the controller"),
        pytest.param(wrapping(a_secret()), {}, USER_CHECK_OFF, None, id="userRBACCheck off and no controller asks nothing"),
        pytest.param(wrapping(a_secret()), {"user": "admin"}, POLICY, None, id="an exempt user is not asked about"),
        pytest.param(an_appwrapper("aw").with_job().with_component(a_secret()).owned_by(
                         "Deployment", "web", "apps/v1").build(), {}, POLICY,
                     [("user", "Job.batch"), ("user", "Secret")],
                     id="an AppWrapper claiming a controller owner is asked about all the same"),
        pytest.param(wrapping(a_secret()), {}, parse_policy("managedNamespaces: {selector: {matchLabels: {team: 'yes'}}}"),
                     None, id="an unmanaged namespace is not asked about"),
        pytest.param(wrapping(a_secret()), {"namespace": "kube-system"}, POLICY, None,
                     id="an exempt namespace is not asked about"),
        pytest.param(wrapping(a_secret()), {"operation": "UPDATE", "old": wrapping(a_secret())}, POLICY, None,
                     id="an UPDATE is not asked about (components are immutable)"),
        pytest.param(a_service().build(), {}, POLICY, None, id="a kind other than AppWrapper is not asked about"),
        pytest.param({**wrapping(), "spec": {"components": "nope"}}, {}, POLICY, None,
                     id="a malformed AppWrapper is left to the validating rules"),
    ],
)
def test_which_questions_a_review_raises(obj, request_args, policy, asked) -> None:
    plan = access_plan(a_request(obj, **request_args), policy, namespace_labels={"team-a": {}})
    assert (kinds_asked(plan) if plan else None) == asked


def test_the_user_is_asked_about_as_authenticated_with_uid_groups_and_extra() -> None:
    request = replace(a_request(wrapping()), user=UserInfo("alice", "1001", ("system:authenticated", "team-a"),
                                                           {"scopes": ("a", "b")}))
    plan = access_plan(request, POLICY)
    assert plan is not None
    assert plan.questions[0].subject == Subject("alice", "1001", ("system:authenticated", "team-a"),
                                                (("scopes", ("a", "b")),))
    assert plan.questions[0].namespace == "team-a" and plan.questions[0].verb == "create"


@pytest.mark.parametrize(
    ("username", "groups"),
    [
        pytest.param(CONTROLLER, ("system:serviceaccounts", "system:serviceaccounts:batchgate-system",
                                  "system:authenticated"), id="a service account gets its service-account groups"),
        pytest.param("batchgate-controller", ("system:authenticated",), id="a plain user is only authenticated"),
    ],
)
def test_the_controller_is_asked_about_with_the_groups_the_api_server_gives_it(username, groups) -> None:
    assert Subject.named(username).groups == groups


def answered(plan, **by_kind: AccessAnswer) -> dict[AccessQuestion, AccessAnswer]:
    """Answers by `role_Kind` (e.g. user_Secret); anything not named is allowed."""
    return {q: by_kind.get(f"{q.role}_{q.kind.kind}", AccessAnswer("allowed", "x")) for q in plan.questions}


SECRET_DENIED = AccessAnswer("denied", "secrets", "")
RBAC_SAID = AccessAnswer("denied", "secrets", "RBAC: no rule")


@pytest.mark.parametrize(
    ("answers", "allowed", "code", "reason", "phrases"),
    [
        pytest.param({}, True, 200, "Allowed", [], id="every kind allowed admits the AppWrapper"),
        pytest.param({"user_Secret": SECRET_DENIED}, False, 403, "ComponentForbidden",
                     ['spec.components[1].template: Secret: User "alice" cannot create resource "secrets" in API '
                      'group "" in the namespace "team-a" (the authorizer gave no reason)'],
                     id="a denied kind names the component by index and kind as kube-apiserver words it"),
        pytest.param({"user_Secret": RBAC_SAID}, False, 403, "ComponentForbidden",
                     ['(the authorizer said: "RBAC: no rule")'], id="the authorizer's reason is quoted"),
        pytest.param({"controller_Job": AccessAnswer("denied", "jobs", "")}, False, 403, "ComponentForbidden",
                     ['spec.components[0].template: Job.batch: the controller (User "system:serviceaccount:'
                      'batchgate-system:batchgate-controller") cannot create resource "jobs" in API group "batch"',
                      "so it could never create this component"],
                     id="a kind the controller may not create is refused at submission"),
        pytest.param({"controller_Secret": AccessAnswer("denied", "secrets", "")}, False, 403, "ComponentForbidden",
                     ["spec.components[1].template: Secret: the controller", "so it could never create this "
                      "component: bind ClusterRole batchgate-controller-team in namespace team-a: see "
                      "docs/install.md#teams"],
                     id="a secret the controller may not create names the team binding the namespace lacks"),
        pytest.param({"controller_JobSet": AccessAnswer("denied", "jobsets", "")}, False, 403, "ComponentForbidden",
                     ["spec.components[1].template: JobSet.jobset.x-k8s.io: the controller", "so it could never "
                      "create this component: install the controller's rights over JobSet: add the kustomize "
                      "component manifests/jobset-leaderworkerset to the install overlay"],
                     id="a JobSet the controller may not create names the optional component that grants it"),
        pytest.param({"user_Secret": AccessAnswer("unavailable", reason="timed out after 2.0s")}, False, 503,
                     "AuthorizationUnavailable", ["could not ask", "(timed out after 2.0s); not admitted, retry"],
                     id="an authorizer that did not answer denies with 503, never allows"),
        pytest.param({"user_Secret": AccessAnswer("unserved")}, False, 403, "ComponentForbidden",
                     ["the API server serves no kind Secret in v1"], id="a kind the API server does not serve is refused"),
        pytest.param({"user_Secret": SECRET_DENIED, "user_Job": AccessAnswer("unavailable", reason="HTTP 500")},
                     False, 403, "ComponentForbidden", ["spec.components[0].template: Job.batch: could not ask",
                                                        "; spec.components[1].template: Secret: User"],
                     id="a denial and an unanswered question are both reported in manifest order"),
    ],
)
def test_the_verdict_the_answers_make(answers, allowed, code, reason, phrases) -> None:
    component = a_jobset().build() if any(k.endswith("_JobSet") for k in answers) else a_secret()
    plan = access_plan(a_request(wrapping(component)), WITH_CONTROLLER)
    assert plan is not None
    verdict = access_verdict(plan, answered(plan, **answers))
    assert (verdict.allowed, verdict.code, verdict.reason) == (allowed, code, reason)
    for phrase in phrases:
        assert phrase in verdict.message


def test_every_component_of_a_denied_kind_is_named() -> None:
    plan = access_plan(a_request(wrapping(a_secret("a"), a_configmap(), a_secret("b"))), POLICY)
    assert plan is not None
    message = access_verdict(plan, answered(plan, user_Secret=SECRET_DENIED)).message
    assert "spec.components[1].template: Secret" in message and "spec.components[3].template: Secret" in message
    assert "components[2]" not in message


@given(st.lists(st.sampled_from([SECRET, JOB, CONFIGMAP]), min_size=1, max_size=12),
       st.dictionaries(st.sampled_from(["Secret", "Job", "ConfigMap"]),
                       st.sampled_from(["allowed", "denied", "unserved", "unavailable"])))
def test_admitted_exactly_when_every_distinct_kind_is_allowed(kinds, outcomes) -> None:
    templates = [{"apiVersion": k.api_version, "kind": k.kind, "metadata": {"name": f"o{i}"}}
                 for i, k in enumerate(kinds)]
    plan = access_plan(a_request(wrapping(*templates)), POLICY)
    assert plan is not None
    assert len(plan.questions) == len({JOB, *kinds})
    answers = {q: AccessAnswer(outcomes.get(q.kind.kind, "allowed"), "r") for q in plan.questions}
    verdict = access_verdict(plan, answers)
    assert verdict.allowed == all(a.outcome == "allowed" for a in answers.values())
