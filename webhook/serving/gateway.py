"""One review in, one reply out: the rules wrapped into replies, shared by server and CLI.

`mutate_reply` and `validate_reply` are pure: the policy and namespace labels are arguments.
A rule that raises is a bug in us, not in the request: the reply says so (code 500 inside an
allowed=false review, logged with its traceback) and the worker keeps serving.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Mapping

from batchgate.frozen import frozen
from batchgate.policy import DEFAULT_POLICY_CONFIGMAP, Policy
from webhook import rules
from webhook.serving.admission_review import Reply, json_patch
from webhook.rules.review import AdmissionRequest, Verdict

log = logging.getLogger("batchgate.webhook")
NamespaceLabels = Mapping[str, Mapping[str, str]]


@frozen
class Decision:
    """A reply plus what the audit line needs beyond it."""

    reply: Reply
    changes: tuple[str, ...] = ()
    mutated: Any = None


def _denied(uid: str, verdict: Verdict) -> Reply:
    return Reply(uid, allowed=False, code=verdict.code if verdict.code >= 400 else 403,
                 reason=verdict.reason, message=verdict.message, warnings=verdict.warnings)


def _internal_error(uid: str, stage: str, exc: Exception) -> Decision:
    """A bug in us: the traceback goes to the log, the user gets no internals (the uid finds it)."""
    log.exception("%s rules failed on request %s", stage, uid)
    return Decision(Reply(uid, allowed=False, code=500, reason="InternalError",
                          message=f"the {stage} rules failed on this request (logged under uid {uid})"))


MAX_PATCH_BYTES = 1024 * 1024
"""Largest JSON Patch `/mutate` sends (before base64). The rules add labels, env and small
layout annotations; only a pathological object could make its patch larger, and the API server
would refuse the result anyway."""


def _patch_too_large(reply: Reply) -> Verdict | None:
    size = len(reply.encoded_patch)
    if size <= MAX_PATCH_BYTES:
        return None
    return Verdict(allowed=False, code=403, reason="PatchTooLarge",
                   message=f"PatchTooLarge: the gateway's changes to this object come to {size} bytes, "
                           f"over the limit of {MAX_PATCH_BYTES}")


def mutate_reply(
    request: AdmissionRequest, policy: Policy, namespace_labels: NamespaceLabels | None = None
) -> Decision:
    """What `/mutate` answers: a JSON Patch of the rules' changes, or a denial of bad input."""
    try:
        mutation = rules.mutate(request, policy, namespace_labels=namespace_labels)
    except Exception as exc:  # noqa: BLE001 - a rule bug must not take the worker down
        return _internal_error(request.uid, "mutating", exc)
    if mutation.denial is not None and not mutation.denial.allowed:
        return Decision(_denied(request.uid, mutation.denial))
    patch = json_patch(request.object, mutation.object)
    reply = Reply(request.uid, allowed=True, patch=patch, warnings=mutation.warnings)
    too_large = _patch_too_large(reply) if patch else None
    if too_large:
        return Decision(_denied(request.uid, too_large))
    return Decision(reply, changes=mutation.changes, mutated=mutation.object if patch else None)


def validate_reply(
    request: AdmissionRequest,
    policy: Policy,
    namespace_labels: NamespaceLabels | None = None,
    policy_configmap: tuple[str, str] = DEFAULT_POLICY_CONFIGMAP,
) -> Decision:
    """What `/validate` answers: allowed, or a denial naming the rule and the field."""
    try:
        verdict = rules.validate(request, policy, namespace_labels=namespace_labels,
                                 policy_configmap=policy_configmap)
    except Exception as exc:  # noqa: BLE001 - a rule bug must not take the worker down
        return _internal_error(request.uid, "validating", exc)
    if not verdict.allowed:
        return Decision(_denied(request.uid, verdict))
    return Decision(Reply(request.uid, allowed=True, warnings=verdict.warnings))


def review_offline(
    request: AdmissionRequest,
    policy: Policy,
    namespace_labels: NamespaceLabels | None = None,
    policy_configmap: tuple[str, str] = DEFAULT_POLICY_CONFIGMAP,
) -> Decision:
    """What the API server would do: `/mutate`, apply its changes, then `/validate` the result."""
    mutated = mutate_reply(request, policy, namespace_labels)
    if not mutated.reply.allowed:
        return mutated
    final = mutated.mutated if mutated.mutated is not None else request.object
    validated = validate_reply(replace(request, object=final), policy, namespace_labels, policy_configmap)
    warnings = tuple(mutated.reply.warnings) + tuple(validated.reply.warnings)
    if not validated.reply.allowed:
        return Decision(replace(validated.reply, warnings=warnings), mutated.changes, final)
    return Decision(replace(mutated.reply, warnings=warnings), mutated.changes, final)
