"""What an unhealthy AppWrapper should do: fail, or reset counted or uncounted (docs/appwrapper.md, "Failure policy").

JobSet's failure-policy idea (KEP-262) mapped onto AppWrapper components: the rules of the
`batchgate.dev/failure-policy` annotation (or the policy's default rules) are tried in order and
the first whose every given condition matches decides. When none matches, upstream's meaning
applies: terminal / retryable exit codes, then Autopilot's uncounted reset, else a counted reset.
Whether a counted reset still fits under retryLimit is the lifecycle's decision, not this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from batchgate import keys
from batchgate.kinds import JOB, PYTORCHJOB, RAYJOB
from batchgate.api.failure_policy import FailurePolicyRule
from controller.decisions.appwrapper.timing import Timing

FAILED = "Failed"
# Wrapped kinds whose condition Failed=True means the component failed (upstream checks these two).
_FAILURE_CONDITION_KINDS = (JOB, PYTORCHJOB)


@dataclass(frozen=True)
class Failure:
    """What went wrong, as the lifecycle observed it.

    `reason` is an Unhealthy reason (keys.UNHEALTHY_REASONS) or a wrapped object's own failure
    reason (e.g. `BackoffLimitExceeded`); the latter also matches rules on `FailedComponent`.
    """

    reason: str
    message: str
    exit_codes: tuple[int, ...] = ()  # non-zero exit codes of the failed pods
    components: tuple[tuple[int, str], ...] = ()  # (index, name) of the components involved


@dataclass(frozen=True)
class Verdict:
    action: Literal["Fail", "Reset", "ResetWithoutCounting"]
    why: str  # for the Event and the condition message
    rule: int | None  # index of the matching rule; None means the built-in default decided


def judge(failure: Failure, timing: Timing) -> Verdict:
    """The first matching failure-policy rule's action, else upstream's default."""
    for index, rule in enumerate(timing.failure_policy):
        if _matches(rule, failure):
            return Verdict(rule.action, f"failure-policy rule {index} ({_describe(rule)}) matched: {rule.action}", index)
    return _default(failure, timing)


def job_failure(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of a wrapped batch/v1 Job's or PyTorchJob's Failed=True condition, or of a
    RayJob whose jobDeploymentStatus is Failed; else None.

    A failure without a reason is reported as `FailedComponent`. Upstream leaves its RayJob check
    disabled (unsure Failed is terminal); in KubeRay it is, once the RayJob's own backoffLimit
    retries are spent, and without it a failed RayJob would hold its quota until someone noticed.
    """
    if RAYJOB.is_kind_of(job):
        return _rayjob_failure(job.get("status"))
    if not any(kind.is_kind_of(job) for kind in _FAILURE_CONDITION_KINDS):
        return None
    status = job.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, Mapping) and cond.get("type") == FAILED and cond.get("status") == "True":
            reason = cond.get("reason")
            message = cond.get("message")
            return (
                reason if isinstance(reason, str) and reason else keys.REASON_FAILED_COMPONENT,
                message if isinstance(message, str) else "",
            )
    return None


def _rayjob_failure(status: Any) -> tuple[str, str] | None:
    if not isinstance(status, Mapping) or status.get("jobDeploymentStatus") != FAILED:
        return None
    reason, message = status.get("reason"), status.get("message")
    return (reason if isinstance(reason, str) and reason else keys.REASON_FAILED_COMPONENT,
            message if isinstance(message, str) else "")


def _reasons(failure: Failure) -> set[str]:
    if failure.reason in keys.UNHEALTHY_REASONS:
        return {failure.reason}
    return {failure.reason, keys.REASON_FAILED_COMPONENT}


def _matches(rule: FailurePolicyRule, failure: Failure) -> bool:
    if rule.on_reasons and not _reasons(failure) & set(rule.on_reasons):
        return False
    if rule.on_exit_codes and not set(failure.exit_codes) & set(rule.on_exit_codes):
        return False
    if rule.target_components:
        involved = {index for index, _ in failure.components} | {name for _, name in failure.components if name}
        if not involved & set(rule.target_components):
            return False
    return True


def _describe(rule: FailurePolicyRule) -> str:
    parts = []
    if rule.on_reasons:
        parts.append(f"onReasons [{', '.join(rule.on_reasons)}]")
    if rule.on_exit_codes:
        parts.append(f"onExitCodes [{', '.join(map(str, rule.on_exit_codes))}]")
    if rule.target_components:
        parts.append(f"targetComponents [{', '.join(map(str, rule.target_components))}]")
    return ", ".join(parts) or "matches any failure"


def _default(failure: Failure, timing: Timing) -> Verdict:
    codes = sorted({code for code in failure.exit_codes if code != 0})
    terminal = [code for code in codes if code in timing.terminal_exit_codes]
    if terminal:
        return Verdict("Fail", f"{_exit_codes_are(terminal)} in terminalExitCodes: Fail", None)
    if timing.retryable_exit_codes is not None:
        unretryable = [code for code in codes if code not in timing.retryable_exit_codes]
        if unretryable:
            allowed = _codes(sorted(timing.retryable_exit_codes))
            return Verdict("Fail", f"{_exit_codes_are(unretryable)} not in retryableExitCodes [{allowed}]: Fail", None)
    if failure.reason == keys.REASON_AUTOPILOT_NO_EXECUTE:
        return Verdict(
            "ResetWithoutCounting",
            "no failure-policy rule matched; pods must leave unhealthy nodes: ResetWithoutCounting",
            None,
        )
    return Verdict("Reset", "no failure-policy rule matched: Reset", None)


def _codes(codes: list[int]) -> str:
    return ", ".join(map(str, codes))


def _exit_codes_are(codes: list[int]) -> str:
    return f"exit code {codes[0]} is" if len(codes) == 1 else f"exit codes {_codes(codes)} are"
