"""Failure-policy verdicts and wrapped-job failure detection (docs/appwrapper.md, "Failure policy").

We test these aspects: rule conditions (reasons, exit codes, components by index or name) and
first-match order; upstream's default when no rule matches (terminal and retryable exit codes,
Autopilot's uncounted reset); the words users see; invariants of rule order with Hypothesis;
and which wrapped objects count as failed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate import keys
from batchgate.api.failure_policy import ACTIONS, REASONS, FailurePolicyRule
from batchgate.policy import FaultTolerance
from controller.decisions.appwrapper.timing import Timing, timing_for
from controller.decisions.appwrapper.failure_policy import Failure, Verdict, job_failure, judge

BASE = timing_for({}, FaultTolerance())
PODS_FAILED = Failure(keys.REASON_FOUND_FAILED_PODS, "2 failed pods", (1, 42), ((0, "trainer"),))
NO_EXECUTE = Failure(keys.REASON_AUTOPILOT_NO_EXECUTE, "pods on node n1 must leave", (), ((0, "trainer"),))
JOB_FAILED = Failure("BackoffLimitExceeded", "Job has reached the specified backoff limit", (), ((1, "eval"),))


def with_rules(*rules: FailurePolicyRule, **changes: Any) -> Timing:
    return replace(BASE, failure_policy=rules, **changes)


RULE_CASES = [
    pytest.param(
        with_rules(FailurePolicyRule("Fail", on_exit_codes=(42,))), PODS_FAILED,
        Verdict("Fail", "failure-policy rule 0 (onExitCodes [42]) matched: Fail", 0),
        id="a rule on an exit code one failed pod returned decides",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", on_exit_codes=(7,))), PODS_FAILED,
        Verdict("Reset", "no failure-policy rule matched: Reset", None),
        id="a rule on an exit code no pod returned does not match",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("ResetWithoutCounting", on_reasons=(keys.REASON_FOUND_FAILED_PODS,),
                                     on_exit_codes=(1,))), PODS_FAILED,
        Verdict("ResetWithoutCounting",
                "failure-policy rule 0 (onReasons [FoundFailedPods], onExitCodes [1]) matched: ResetWithoutCounting", 0),
        id="a rule whose reason and exit code both match decides",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", on_reasons=(keys.REASON_INSUFFICIENT_PODS_READY,), on_exit_codes=(1,))),
        PODS_FAILED, Verdict("Reset", "no failure-policy rule matched: Reset", None),
        id="a rule whose exit code matches but whose reason does not is skipped",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Reset", on_reasons=(keys.REASON_CREATE_FAILED,)),
                   FailurePolicyRule("Fail", on_reasons=(keys.REASON_FOUND_FAILED_PODS,)),
                   FailurePolicyRule("ResetWithoutCounting")), PODS_FAILED,
        Verdict("Fail", "failure-policy rule 1 (onReasons [FoundFailedPods]) matched: Fail", 1),
        id="the first matching rule wins over a later catch all",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", target_components=("trainer",))), PODS_FAILED,
        Verdict("Fail", "failure-policy rule 0 (targetComponents [trainer]) matched: Fail", 0),
        id="a rule naming the involved component by name matches",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", target_components=(0,))), PODS_FAILED,
        Verdict("Fail", "failure-policy rule 0 (targetComponents [0]) matched: Fail", 0),
        id="a rule naming the involved component by index matches",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", target_components=(1, "eval"))), PODS_FAILED,
        Verdict("Reset", "no failure-policy rule matched: Reset", None),
        id="a rule naming only other components does not match",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", target_components=(0,))),
        replace(PODS_FAILED, components=()),
        Verdict("Reset", "no failure-policy rule matched: Reset", None),
        id="a rule on components does not match a failure that names none",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Fail", on_reasons=(keys.REASON_FAILED_COMPONENT,))), JOB_FAILED,
        Verdict("Fail", "failure-policy rule 0 (onReasons [FailedComponent]) matched: Fail", 0),
        id="a wrapped job's own failure reason also matches a rule on FailedComponent",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Reset", on_reasons=("DeadlineExceeded",)),
                   FailurePolicyRule("Fail", on_reasons=("BackoffLimitExceeded",))), JOB_FAILED,
        Verdict("Fail", "failure-policy rule 1 (onReasons [BackoffLimitExceeded]) matched: Fail", 1),
        id="a rule on the wrapped job's failure reason tells backoff from deadline",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Reset", on_reasons=(keys.REASON_FAILED_COMPONENT,))), PODS_FAILED,
        Verdict("Reset", "no failure-policy rule matched: Reset", None),
        id="failed pods do not match a rule on FailedComponent",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Reset")), NO_EXECUTE,
        Verdict("Reset", "failure-policy rule 0 (matches any failure) matched: Reset", 0),
        id="a rule may count an Autopilot reset against the retry limit",
    ),
    pytest.param(
        with_rules(FailurePolicyRule("Reset", on_exit_codes=(42,)), terminal_exit_codes=frozenset({42})), PODS_FAILED,
        Verdict("Reset", "failure-policy rule 0 (onExitCodes [42]) matched: Reset", 0),
        id="a matching rule overrides terminal exit codes",
    ),
]


@pytest.mark.parametrize(("timing", "failure", "expected"), RULE_CASES)
def test_rules(timing: Timing, failure: Failure, expected: Verdict) -> None:
    assert judge(failure, timing) == expected


DEFAULT_CASES = [
    pytest.param(BASE, PODS_FAILED, Verdict("Reset", "no failure-policy rule matched: Reset", None),
                 id="failed pods without exit-code settings are a counted reset"),
    pytest.param(replace(BASE, terminal_exit_codes=frozenset({42})), PODS_FAILED,
                 Verdict("Fail", "exit code 42 is in terminalExitCodes: Fail", None),
                 id="a terminal exit code fails the AppWrapper"),
    pytest.param(replace(BASE, terminal_exit_codes=frozenset({1, 42})), PODS_FAILED,
                 Verdict("Fail", "exit codes 1, 42 are in terminalExitCodes: Fail", None),
                 id="every terminal exit code is named"),
    pytest.param(replace(BASE, terminal_exit_codes=frozenset({3})), PODS_FAILED,
                 Verdict("Reset", "no failure-policy rule matched: Reset", None),
                 id="terminal exit codes nobody returned change nothing"),
    pytest.param(replace(BASE, retryable_exit_codes=frozenset({1, 42})), PODS_FAILED,
                 Verdict("Reset", "no failure-policy rule matched: Reset", None),
                 id="exit codes all in retryableExitCodes are a counted reset"),
    pytest.param(replace(BASE, retryable_exit_codes=frozenset({1})), PODS_FAILED,
                 Verdict("Fail", "exit code 42 is not in retryableExitCodes [1]: Fail", None),
                 id="an exit code outside retryableExitCodes fails the AppWrapper"),
    pytest.param(replace(BASE, retryable_exit_codes=frozenset({1})), replace(PODS_FAILED, exit_codes=(0,)),
                 Verdict("Reset", "no failure-policy rule matched: Reset", None),
                 id="exit code zero is never judged against retryableExitCodes"),
    pytest.param(BASE, NO_EXECUTE,
                 Verdict("ResetWithoutCounting",
                         "no failure-policy rule matched; pods must leave unhealthy nodes: ResetWithoutCounting", None),
                 id="Autopilot's no execute reset is not counted"),
    pytest.param(BASE, JOB_FAILED, Verdict("Reset", "no failure-policy rule matched: Reset", None),
                 id="a failed wrapped job is a counted reset"),
    pytest.param(BASE, Failure(keys.REASON_CREATE_FAILED, "webhook denied the Job"),
                 Verdict("Reset", "no failure-policy rule matched: Reset", None),
                 id="a failed create is a counted reset"),
]


@pytest.mark.parametrize(("timing", "failure", "expected"), DEFAULT_CASES)
def test_default_without_a_matching_rule(timing: Timing, failure: Failure, expected: Verdict) -> None:
    assert judge(failure, timing) == expected


rules_st = st.builds(
    FailurePolicyRule,
    action=st.sampled_from(ACTIONS),
    on_reasons=st.lists(st.sampled_from(REASONS), max_size=2, unique=True).map(tuple),
    on_exit_codes=st.lists(st.integers(1, 5), max_size=2, unique=True).map(tuple),
    target_components=st.lists(st.one_of(st.integers(0, 2), st.sampled_from(["a", "b"])), max_size=2).map(tuple),
)
failures_st = st.builds(
    Failure,
    reason=st.sampled_from(REASONS),
    message=st.just("m"),
    exit_codes=st.lists(st.integers(1, 5), max_size=3).map(tuple),
    components=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", ""])), max_size=2).map(tuple),
)
timings_st = st.builds(
    lambda rules, terminal, retryable: replace(BASE, failure_policy=tuple(rules), terminal_exit_codes=terminal,
                                               retryable_exit_codes=retryable),
    st.lists(rules_st, max_size=4),
    st.frozensets(st.integers(1, 5), max_size=2),
    st.one_of(st.none(), st.frozensets(st.integers(1, 5), min_size=1, max_size=3)),
)


@given(failures_st, timings_st)
def test_the_deciding_rule_is_the_first_that_matches_alone(failure: Failure, timing: Timing) -> None:
    verdict = judge(failure, timing)
    if verdict.rule is None:
        assert all(judge(failure, replace(timing, failure_policy=(r,))).rule is None for r in timing.failure_policy)
        return
    decider = timing.failure_policy[verdict.rule]
    assert verdict.action == decider.action
    assert judge(failure, replace(timing, failure_policy=(decider,))).rule == 0
    earlier = timing.failure_policy[: verdict.rule]
    assert all(judge(failure, replace(timing, failure_policy=(r,))).rule is None for r in earlier)


@given(failures_st, timings_st, st.sampled_from(ACTIONS))
def test_a_catch_all_rule_only_decides_what_nothing_before_it_did(failure: Failure, timing: Timing, action: str) -> None:
    before = judge(failure, timing)
    after = judge(failure, replace(timing, failure_policy=timing.failure_policy + (FailurePolicyRule(action),)))
    if before.rule is not None:
        assert after == before
    else:
        assert (after.action, after.rule) == (action, len(timing.failure_policy))


@given(failures_st, timings_st)
def test_without_rules_only_exit_codes_can_fail(failure: Failure, timing: Timing) -> None:
    verdict = judge(failure, replace(timing, failure_policy=()))
    codes = set(failure.exit_codes)
    terminal = bool(codes & timing.terminal_exit_codes)
    unretryable = timing.retryable_exit_codes is not None and bool(codes - timing.retryable_exit_codes)
    assert (verdict.action == "Fail") == (terminal or unretryable)
    assert verdict.rule is None


def wrapped(api_version: str, kind: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "status": {"conditions": list(conditions)}}


FAILED_BACKOFF = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                  "message": "Job has reached the specified backoff limit"}

JOB_CASES = [
    pytest.param(wrapped("batch/v1", "Job", FAILED_BACKOFF),
                 ("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                 id="a Job with condition Failed True reports its reason and message"),
    pytest.param(wrapped("batch/v1", "Job", {"type": "Complete", "status": "True"}, FAILED_BACKOFF),
                 ("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                 id="the Failed condition is found among others"),
    pytest.param(wrapped("batch/v1", "Job", {**FAILED_BACKOFF, "status": "False"}), None,
                 id="a Job whose Failed condition is False has not failed"),
    pytest.param(wrapped("batch/v1", "Job", {"type": "Failed", "status": "True"}), ("FailedComponent", ""),
                 id="a Failed condition without reason is reported as FailedComponent"),
    pytest.param(wrapped("kubeflow.org/v1", "PyTorchJob",
                         {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "message": "worker 1 failed"}),
                 ("PyTorchJobFailed", "worker 1 failed"), id="a PyTorchJob with condition Failed True has failed"),
    pytest.param(wrapped("ray.io/v1", "RayCluster", {"type": "Failed", "status": "True"}), None,
                 id="a RayCluster is never judged failed as upstream does not"),
    pytest.param({"apiVersion": "ray.io/v1", "kind": "RayJob", "status": {
        "jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "reason": "AppFailed", "message": "exit 3"}},
                 ("AppFailed", "exit 3"), id="a RayJob whose deployment Failed has failed, beyond upstream's disabled check"),
    pytest.param({"apiVersion": "ray.io/v1", "kind": "RayJob", "status": {"jobDeploymentStatus": "Running",
                                                                        "jobStatus": "FAILED"}}, None,
                 id="a RayJob still deploying has not failed whatever its job status says"),
    pytest.param({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}, None,
                 id="a Job without status has not failed"),
    pytest.param({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": "broken"}}, None,
                 id="a Job with malformed conditions has not failed"),
]


@pytest.mark.parametrize(("job", "expected"), JOB_CASES)
def test_job_failure(job: dict[str, Any], expected: tuple[str, str] | None) -> None:
    assert job_failure(job) == expected
