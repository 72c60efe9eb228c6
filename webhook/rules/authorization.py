"""Per-component authorization of an AppWrapper (upstream's userRBACAdmissionCheck, and more).

The controller creates an AppWrapper's components under its own, broad identity. Without a check,
anyone allowed to create AppWrappers could have it create what RBAC forbids them (a confused
deputy). So on CREATE every component kind must be one the submitter may `create` in the
AppWrapper's namespace; and, beyond upstream (its issue #112), one the controller may create,
so an AppWrapper it could never run fails at submission instead of in CreateFailed.

Pure, in two steps around the I/O: `access_plan` says which questions a review needs (one per
distinct subject and kind, never one per component), an adapter answers them
(webhook/authorization/), and `access_verdict` turns the answers into the denial.
"""

from __future__ import annotations

from typing import Literal, Mapping

from batchgate.api.appwrapper import parse_appwrapper
from batchgate.api.errors import FieldError, child
from batchgate.frozen import frozen
from batchgate.policy import Policy
from batchgate.controller_rights import rights_fix
from batchgate.kinds import APPWRAPPER
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo, Verdict
from webhook.rules.scope import classify
from webhook.rules.validation import allow, deny

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
AUTHENTICATED = "system:authenticated"

Role = Literal["user", "controller"]
Outcome = Literal["allowed", "denied", "unserved", "unavailable"]


@frozen
class Subject:
    """Who a SubjectAccessReview asks about: hashable, so it can key a cache."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def of(cls, user: UserInfo) -> "Subject":
        return cls(user.username, user.uid, tuple(user.groups),
                   tuple(sorted((k, tuple(v)) for k, v in user.extra.items())))

    @classmethod
    def named(cls, username: str) -> "Subject":
        """A configured identity, with the groups the API server gives it when it authenticates:
        a service account is in `system:serviceaccounts` and `system:serviceaccounts:<ns>`."""
        if username.startswith(SERVICE_ACCOUNT_PREFIX):
            namespace = username[len(SERVICE_ACCOUNT_PREFIX):].partition(":")[0]
            return cls(username, groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                                         AUTHENTICATED))
        return cls(username, groups=(AUTHENTICATED,))


@frozen
class AccessQuestion:
    """May `subject` `verb` objects of `kind` in `namespace`? The adapter finds the resource."""

    role: Role
    subject: Subject
    kind: GroupVersionKind
    namespace: str
    verb: str = "create"


@frozen
class AccessAnswer:
    """The authorizer's answer. `resource` is the plural discovery gave (empty if unserved);
    `reason` quotes the authorizer (its reason and evaluation error), or says why no answer came."""

    outcome: Outcome
    resource: str = ""
    reason: str = ""


@frozen
class AccessPlan:
    """The components' kinds by index, and the distinct questions they raise."""

    components: tuple[tuple[int, GroupVersionKind], ...]
    questions: tuple[AccessQuestion, ...]


def access_plan(
    request: AdmissionRequest,
    policy: Policy,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> AccessPlan | None:
    """The questions a review needs, or None when no check applies: only CREATE of an AppWrapper
    by a non-exempt user in a managed namespace, with a check switched on. Whatever owner the
    AppWrapper names, its components are made by our controller, so a claimed ownerReference
    skips nothing. Call it on a request the validating rules allowed (the components then parse,
    and their kinds are in `allowedKinds.wrapped`, which bounds the questions)."""
    checks = policy.authorization
    controllers = policy.controllers.app_wrapper
    if not checks.user_rbac_check and not controllers:
        return None
    if request.operation != "CREATE" or request.sub_resource or request.kind.qualified != APPWRAPPER.qualified:
        return None
    if classify(request, policy, namespace_labels, request.object) in ("exempt", "unmanaged"):
        return None
    try:
        aw = parse_appwrapper(request.object)
    except FieldError:
        return None  # the validating rules deny it first
    components = tuple((c.index, GroupVersionKind.from_api_version(c.api_version, c.kind))
                       for c in aw.components)
    subjects: list[tuple[Role, Subject]] = []
    if checks.user_rbac_check:
        subjects.append(("user", Subject.of(request.user)))
    subjects += [("controller", Subject.named(account)) for account in controllers]
    questions = dict.fromkeys(AccessQuestion(role, subject, kind, request.namespace)
                              for role, subject in subjects for _, kind in components)
    return AccessPlan(components, tuple(questions))


def access_verdict(plan: AccessPlan, answers: Mapping[AccessQuestion, AccessAnswer]) -> Verdict:
    """Allowed when every question was answered allowed. Otherwise a denial naming each component
    by index and kind: 403 `ComponentForbidden` when an authorizer said no (or the kind is not
    served), else 503 `AuthorizationUnavailable` (an API error or timeout: retry, never allow)."""
    problems: list[tuple[int, int, FieldError]] = []  # (component index, question order, error)
    outcomes: set[Outcome] = set()
    for order, question in enumerate(plan.questions):
        answer = answers.get(question, AccessAnswer("unavailable", reason="no answer"))
        if answer.outcome == "allowed":
            continue
        outcomes.add(answer.outcome)
        for index, kind in plan.components:
            if kind == question.kind:
                problems.append((index, order, FieldError(child(f"spec.components[{index}]", "template"),
                                                          f"{kind.qualified}: {_explain(question, answer)}")))
    if not problems:
        return allow()
    errors = [error for _, _, error in sorted(problems, key=lambda p: p[:2])]  # in the manifest's order
    if outcomes == {"unavailable"}:
        return deny("AuthorizationUnavailable", errors, code=503)
    return deny("ComponentForbidden", errors)


def _explain(question: AccessQuestion, answer: AccessAnswer) -> str:
    who = f'User "{question.subject.username}"'
    if question.role == "controller":
        who = f"the controller ({who})"
    kind = question.kind
    if answer.outcome == "unserved":
        return (f"{who} cannot be authorized to create it: the API server serves no kind {kind.kind} "
                f"in {kind.api_version}")
    if answer.outcome == "unavailable":
        return (f"could not ask whether {who} may create it in the namespace {question.namespace!r} "
                f"({answer.reason}); not admitted, retry")
    sentence = (f'{who} cannot {question.verb} resource "{answer.resource}" in API group "{kind.group}" '
                f'in the namespace "{question.namespace}"')
    if question.role == "controller":
        sentence += ", so it could never create this component"
        fix = rights_fix(kind.api_version, kind.kind, question.namespace)
        sentence += f": {fix}" if fix else ""
    quoted = f'the authorizer said: "{answer.reason}"' if answer.reason else "the authorizer gave no reason"
    return f"{sentence} ({quoted})"
