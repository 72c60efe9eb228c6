"""Malformed fault-tolerance and failure-policy annotations are denied with their field path.

Upstream silently falls back to defaults for a malformed value (docs/appwrapper.md, "Fault tolerance annotations");
we deny instead, because the user meant something and would otherwise learn it only when a
retry behaves unexpectedly hours later. Malformed means what upstream's Go parsing rejects
(`time.ParseDuration`, `strconv.Atoi`: no blanks around a value or a list item), so nothing the
gateway admits is read differently by an upstream-compatible controller.
"""

from __future__ import annotations

from typing import Any, Mapping

from batchgate import keys
from batchgate.api.errors import FieldError
from batchgate.api.failure_policy import parse_failure_policy_annotation
from batchgate.durations import DurationError, parse_duration
from batchgate.go_numbers import NumberError, atoi


def _at(key: str) -> str:
    return f"metadata.annotations[{key}]"


def check_annotations(annotations: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in keys.DURATION_ANNOTATIONS:
        if key in annotations:
            try:
                parse_duration(annotations[key])
            except DurationError as exc:
                errors.append(FieldError(_at(key), str(exc)))
    if keys.RETRY_LIMIT_ANNOTATION in annotations:
        error = _retry_limit(annotations[keys.RETRY_LIMIT_ANNOTATION])
        if error:
            errors.append(FieldError(_at(keys.RETRY_LIMIT_ANNOTATION), error))
    for key in keys.EXIT_CODE_LIST_ANNOTATIONS:
        if key in annotations:
            errors.extend(_exit_codes(key, annotations[key]))
    if keys.FAILURE_POLICY_ANNOTATION in annotations:
        try:
            parse_failure_policy_annotation(
                annotations[keys.FAILURE_POLICY_ANNOTATION], _at(keys.FAILURE_POLICY_ANNOTATION)
            )
        except FieldError as exc:
            errors.append(exc)
    return errors


def _retry_limit(value: Any) -> str:
    """Why the retry limit is unusable, or ""; upstream converts it to int32."""
    try:
        limit = atoi(value)
    except NumberError as exc:
        return f"must be a non-negative integer: {exc}"
    if not 0 <= limit < 2**31:
        return f"must be a non-negative integer below 2^31, got {value!r}"
    return ""


def _exit_codes(key: str, value: Any) -> list[FieldError]:
    if not isinstance(value, str):
        return [FieldError(_at(key), "must be a comma-separated list of exit codes")]
    for item in value.split(","):
        try:
            code = atoi(item)
        except NumberError as exc:
            return [FieldError(_at(key), f"{exc}; expected exit codes 0-255 separated by commas, e.g. '3,10,42'")]
        if not 0 <= code <= 255:
            return [FieldError(_at(key), f"{item!r} is not an exit code (0-255); expected e.g. '3,10,42'")]
    return []
