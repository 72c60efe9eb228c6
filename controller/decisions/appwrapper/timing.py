"""The effective fault-tolerance timing of one AppWrapper: its annotations over the policy defaults.

Upstream semantics (docs/appwrapper.md, "Fault tolerance annotations"): a malformed annotation, which is whatever Go's
`time.ParseDuration` or `strconv.Atoi` rejects (`" 2s"`, `" 0"` and the `" 4"` of `"3, 4"` among
them), falls back to the default; every duration except successTTL is clamped to [0, gracePeriodMaximum] (defaults
included); retryLimit is taken as written; successTTL counts only if 0 < ttl < the policy's.
The gateway denies malformed annotations, but the controller still meets objects written
before a policy change or by exempt users, so nothing here may raise.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Mapping

from batchgate import keys
from batchgate.api.errors import FieldError
from batchgate.api.failure_policy import FailurePolicyRule, parse_failure_policy_annotation
from batchgate.durations import DurationError, parse_duration
from batchgate.go_numbers import NumberError, atoi, int32
from batchgate.policy import FaultTolerance


@dataclass(frozen=True)
class Timing:
    """Grace periods, limits and exit-code rules that steer one AppWrapper's lifecycle."""

    admission_grace: _dt.timedelta
    warmup_grace: _dt.timedelta
    failure_grace: _dt.timedelta
    retry_pause: _dt.timedelta
    retry_limit: int
    forceful_deletion_grace: _dt.timedelta
    deletion_on_failure_grace: _dt.timedelta
    success_ttl: _dt.timedelta
    terminal_exit_codes: frozenset[int]
    retryable_exit_codes: frozenset[int] | None  # None: not set, every non-zero code may be retried
    failure_policy: tuple[FailurePolicyRule, ...]


def timing_for(annotations: Mapping[str, str], defaults: FaultTolerance) -> Timing:
    """Read the fault-tolerance annotations of an AppWrapper over the policy's defaults."""
    ceiling = defaults.grace_period_maximum

    def grace(key: str, default: _dt.timedelta) -> _dt.timedelta:
        chosen = _duration(annotations.get(key))
        return _clamp(default if chosen is None else chosen, ceiling)

    return Timing(
        admission_grace=grace(keys.ADMISSION_GRACE_PERIOD_ANNOTATION, defaults.admission_grace_period),
        warmup_grace=grace(keys.WARMUP_GRACE_PERIOD_ANNOTATION, defaults.warmup_grace_period),
        failure_grace=grace(keys.FAILURE_GRACE_PERIOD_ANNOTATION, defaults.failure_grace_period),
        retry_pause=grace(keys.RETRY_PAUSE_PERIOD_ANNOTATION, defaults.retry_pause_period),
        retry_limit=_retry_limit(annotations.get(keys.RETRY_LIMIT_ANNOTATION), defaults.retry_limit),
        forceful_deletion_grace=grace(
            keys.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, defaults.forceful_deletion_grace_period
        ),
        deletion_on_failure_grace=grace(
            keys.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, defaults.deletion_on_failure_grace_period
        ),
        success_ttl=_success_ttl(annotations.get(keys.SUCCESS_TTL_ANNOTATION), defaults.success_ttl),
        terminal_exit_codes=_exit_codes(annotations.get(keys.TERMINAL_EXIT_CODES_ANNOTATION)) or frozenset(),
        retryable_exit_codes=_exit_codes(annotations.get(keys.RETRYABLE_EXIT_CODES_ANNOTATION)),
        failure_policy=_failure_policy(annotations.get(keys.FAILURE_POLICY_ANNOTATION), defaults.failure_policy),
    )


def _duration(text: object) -> _dt.timedelta | None:
    if not isinstance(text, str):
        return None
    try:
        return parse_duration(text)
    except DurationError:
        return None


def _clamp(value: _dt.timedelta, ceiling: _dt.timedelta) -> _dt.timedelta:
    return max(_dt.timedelta(0), min(value, ceiling))


def _retry_limit(text: object, default: int) -> int:
    """Taken as written, even negative, and converted to int32 as upstream converts it."""
    try:
        return int32(atoi(text))
    except NumberError:
        return default


def _success_ttl(text: object, ceiling: _dt.timedelta) -> _dt.timedelta:
    chosen = _duration(text)
    if chosen is not None and _dt.timedelta(0) < chosen < ceiling:
        return chosen
    return ceiling


def _exit_codes(text: object) -> frozenset[int] | None:
    """The integers of a comma-separated list, others ignored; None when there are none.

    Upstream treats an empty list as "not set", so a list without one integer is not set either.
    """
    if not isinstance(text, str):
        return None
    codes = set()
    for part in text.split(","):
        try:
            codes.add(atoi(part))
        except NumberError:
            continue
    return frozenset(codes) or None


def _failure_policy(
    text: object, default: tuple[FailurePolicyRule, ...]
) -> tuple[FailurePolicyRule, ...]:
    if text is None:
        return default
    try:
        return parse_failure_policy_annotation(text, f"metadata.annotations[{keys.FAILURE_POLICY_ANNOTATION}]")
    except FieldError:
        return default
