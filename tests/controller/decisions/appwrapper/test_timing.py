"""Effective AppWrapper timing: annotations over policy defaults, as upstream reads them.

We test these aspects: upstream's annotation cases (its controller's unit tests) as a
table; policy defaults are clamped too; successTTL only shortens; exit-code lists; the
failure-policy annotation over the policy's rules; and that no annotation text can raise.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate import keys
from batchgate.api.failure_policy import FailurePolicyRule
from batchgate.durations import format_duration
from batchgate.policy import FaultTolerance
from controller.decisions.appwrapper.timing import Timing, timing_for

DEFAULTS = FaultTolerance()
SECONDS_10 = _dt.timedelta(seconds=10)
ZERO = _dt.timedelta(0)
CEILING = DEFAULTS.grace_period_maximum

GRACE_FIELDS = {
    keys.ADMISSION_GRACE_PERIOD_ANNOTATION: "admission_grace",
    keys.WARMUP_GRACE_PERIOD_ANNOTATION: "warmup_grace",
    keys.FAILURE_GRACE_PERIOD_ANNOTATION: "failure_grace",
    keys.RETRY_PAUSE_PERIOD_ANNOTATION: "retry_pause",
    keys.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: "forceful_deletion_grace",
    keys.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: "deletion_on_failure_grace",
}


def default_timing(**changes: Any) -> Timing:
    base = Timing(
        admission_grace=DEFAULTS.admission_grace_period,
        warmup_grace=DEFAULTS.warmup_grace_period,
        failure_grace=DEFAULTS.failure_grace_period,
        retry_pause=DEFAULTS.retry_pause_period,
        retry_limit=DEFAULTS.retry_limit,
        forceful_deletion_grace=DEFAULTS.forceful_deletion_grace_period,
        deletion_on_failure_grace=ZERO,
        success_ttl=DEFAULTS.success_ttl,
        terminal_exit_codes=frozenset(),
        retryable_exit_codes=None,
        failure_policy=(),
    )
    return replace(base, **changes)


def every_duration(value: str) -> dict[str, str]:
    return {key: value for key in (*GRACE_FIELDS, keys.SUCCESS_TTL_ANNOTATION)}


UPSTREAM_CASES = [
    pytest.param({}, default_timing(), id="an unannotated AppWrapper uses the policy defaults"),
    pytest.param(
        {**every_duration("10s"), keys.RETRY_LIMIT_ANNOTATION: "101"},
        default_timing(**{f: SECONDS_10 for f in GRACE_FIELDS.values()}, success_ttl=SECONDS_10, retry_limit=101),
        id="valid annotations override every default and a retry limit above the default is kept",
    ),
    pytest.param(
        {**every_duration("222badTime"), keys.RETRY_LIMIT_ANNOTATION: "abc"},
        default_timing(),
        id="malformed annotations fall back to the defaults",
    ),
    pytest.param(
        {
            keys.ADMISSION_GRACE_PERIOD_ANNOTATION: "-10m",
            keys.WARMUP_GRACE_PERIOD_ANNOTATION: "48h",
            keys.FAILURE_GRACE_PERIOD_ANNOTATION: "48h",
            keys.RETRY_PAUSE_PERIOD_ANNOTATION: "-10m",
            keys.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: "48h",
            keys.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: "48h",
            keys.SUCCESS_TTL_ANNOTATION: format_duration(DEFAULTS.success_ttl + SECONDS_10),
        },
        default_timing(admission_grace=ZERO, warmup_grace=CEILING, failure_grace=CEILING, retry_pause=ZERO,
                       forceful_deletion_grace=CEILING, deletion_on_failure_grace=CEILING),
        id="out of bounds durations are clipped to zero or the ceiling and a longer success ttl is ignored",
    ),
    pytest.param(
        {keys.TERMINAL_EXIT_CODES_ANNOTATION: "3,10,abc,42", keys.RETRYABLE_EXIT_CODES_ANNOTATION: "x,10,20"},
        default_timing(terminal_exit_codes=frozenset({3, 10, 42}), retryable_exit_codes=frozenset({10, 20})),
        id="exit code lists keep their integers and ignore the rest",
    ),
]


@pytest.mark.parametrize(("annotations", "expected"), UPSTREAM_CASES)
def test_upstream_annotation_cases(annotations: dict[str, str], expected: Timing) -> None:
    assert timing_for(annotations, DEFAULTS) == expected


EDGE_CASES = [
    pytest.param({keys.SUCCESS_TTL_ANNOTATION: "0s"}, default_timing(),
                 id="a zero success ttl keeps the policy ttl"),
    pytest.param({keys.SUCCESS_TTL_ANNOTATION: "-1h"}, default_timing(),
                 id="a negative success ttl keeps the policy ttl"),
    pytest.param({keys.SUCCESS_TTL_ANNOTATION: "168h"}, default_timing(),
                 id="a success ttl equal to the policy ttl is the policy ttl"),
    pytest.param({keys.SUCCESS_TTL_ANNOTATION: "30h"}, default_timing(success_ttl=_dt.timedelta(hours=30)),
                 id="a success ttl above the grace ceiling but below the policy ttl is not clamped"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "0"}, default_timing(retry_limit=0),
                 id="a retry limit of zero is honoured"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "-2"}, default_timing(retry_limit=-2),
                 id="a negative retry limit is taken as written as upstream does"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "2.5"}, default_timing(),
                 id="a fractional retry limit is malformed"),
    pytest.param({keys.ADMISSION_GRACE_PERIOD_ANNOTATION: "1m30s"},
                 default_timing(admission_grace=_dt.timedelta(seconds=90)),
                 id="go duration syntax with several units is read"),
    pytest.param({keys.ADMISSION_GRACE_PERIOD_ANNOTATION: "99999999999999999999h"}, default_timing(),
                 id="a duration too large for any clock falls back to the default"),
    pytest.param({keys.ADMISSION_GRACE_PERIOD_ANNOTATION: "24h0m1s"}, default_timing(admission_grace=CEILING),
                 id="one second past the ceiling is clamped"),
    # Go's ParseDuration and Atoi reject blanks (appwrapper_controller.go, retryLimit and
    # terminalExitCodes): upstream ignores such a value, so its default applies here too.
    pytest.param({keys.TERMINAL_EXIT_CODES_ANNOTATION: "3, 10 ,42"},
                 default_timing(terminal_exit_codes=frozenset({3, 42})),
                 id="exit codes with blanks around them are ignored one by one as strconv.Atoi ignores them"),
    pytest.param({keys.ADMISSION_GRACE_PERIOD_ANNOTATION: " 2s"}, default_timing(),
                 id="a duration with a leading blank is malformed as in Go"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: " 0"}, default_timing(),
                 id="a retry limit with a leading blank is malformed as in Go"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "+2"}, default_timing(retry_limit=2),
                 id="a plus sign is allowed as strconv.Atoi allows it"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "4294967297"}, default_timing(retry_limit=1),
                 id="a retry limit beyond int32 wraps as upstream's int32 conversion does"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "9223372036854775808"}, default_timing(),
                 id="a retry limit beyond int64 is malformed as strconv.Atoi says out of range"),
    pytest.param({keys.RETRY_LIMIT_ANNOTATION: "1_000"}, default_timing(),
                 id="underscores are malformed in base 10"),
    pytest.param({keys.RETRYABLE_EXIT_CODES_ANNOTATION: "abc"}, default_timing(),
                 id="a retryable list without one integer is not set"),
    pytest.param({keys.RETRYABLE_EXIT_CODES_ANNOTATION: ""}, default_timing(),
                 id="an empty retryable list is not set"),
]


@pytest.mark.parametrize(("annotations", "expected"), EDGE_CASES)
def test_edge_cases(annotations: dict[str, str], expected: Timing) -> None:
    assert timing_for(annotations, DEFAULTS) == expected


def test_policy_defaults_above_the_ceiling_are_clamped_too() -> None:
    defaults = replace(DEFAULTS, grace_period_maximum=_dt.timedelta(minutes=2))
    timing = timing_for({}, defaults)
    assert (timing.warmup_grace, timing.forceful_deletion_grace) == (_dt.timedelta(minutes=2),) * 2
    assert timing.retry_pause == _dt.timedelta(seconds=90)
    assert timing.success_ttl == DEFAULTS.success_ttl


RESET_ON_42 = (FailurePolicyRule("Reset", on_exit_codes=(42,)),)
FAIL_ALWAYS = (FailurePolicyRule("Fail"),)

FAILURE_POLICY_CASES = [
    pytest.param(None, RESET_ON_42, id="no annotation takes the policy rules"),
    pytest.param('[{"action": "Fail"}]', FAIL_ALWAYS, id="a json annotation replaces the policy rules"),
    pytest.param("- action: Fail\n", FAIL_ALWAYS, id="a yaml annotation replaces the policy rules"),
    pytest.param("[]", (), id="an empty list annotation switches the policy rules off"),
    pytest.param('[{"action": "Explode"}]', RESET_ON_42, id="an annotation with an unknown action is ignored"),
    pytest.param("{not: [valid", RESET_ON_42, id="an annotation that is not yaml is ignored"),
    pytest.param("", RESET_ON_42, id="an empty annotation is ignored"),
]


@pytest.mark.parametrize(("annotation", "expected"), FAILURE_POLICY_CASES)
def test_failure_policy_annotation_over_the_policy_default(
    annotation: str | None, expected: tuple[FailurePolicyRule, ...]
) -> None:
    defaults = replace(DEFAULTS, failure_policy=RESET_ON_42)
    annotations = {} if annotation is None else {keys.FAILURE_POLICY_ANNOTATION: annotation}
    assert timing_for(annotations, defaults).failure_policy == expected


ANNOTATION_KEYS = [*keys.DURATION_ANNOTATIONS, keys.RETRY_LIMIT_ANNOTATION, *keys.EXIT_CODE_LIST_ANNOTATIONS,
                   keys.FAILURE_POLICY_ANNOTATION]


@given(st.dictionaries(st.sampled_from(ANNOTATION_KEYS), st.text(max_size=30)))
def test_any_annotation_text_gives_durations_within_bounds(annotations: dict[str, str]) -> None:
    timing = timing_for(annotations, DEFAULTS)
    for field in GRACE_FIELDS.values():
        assert ZERO <= getattr(timing, field) <= CEILING
    assert ZERO < timing.success_ttl <= DEFAULTS.success_ttl
    assert timing.retryable_exit_codes is None or timing.retryable_exit_codes


@given(st.sampled_from(list(GRACE_FIELDS)), st.integers(min_value=-10**7, max_value=10**7))
def test_a_grace_annotation_in_seconds_is_the_value_clamped(key: str, seconds: int) -> None:
    timing = timing_for({key: f"{seconds}s"}, DEFAULTS)
    expected = max(ZERO, min(_dt.timedelta(seconds=seconds), CEILING))
    assert getattr(timing, GRACE_FIELDS[key]) == expected
