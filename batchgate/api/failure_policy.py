"""Failure-policy rules (docs/appwrapper.md, "Failure policy"): what to do when a wrapped workload turns unhealthy.

Shared by the policy (`faultTolerance.failurePolicy`, the default rules), the gateway (which
denies a malformed `batchgate.dev/failure-policy` annotation) and the controller (which applies
them). Rules are tried in order; the first whose every given condition matches wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import yaml

from batchgate import keys
from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.kueue_fields import sequence
from batchgate.api.located_yaml import LocatedYAMLError, check_bounds

Action = Literal["Fail", "Reset", "ResetWithoutCounting"]
ACTIONS: tuple[Action, ...] = ("Fail", "Reset", "ResetWithoutCounting")
REASONS: tuple[str, ...] = keys.UNHEALTHY_REASONS + keys.JOB_FAILURE_REASONS
_FIELDS = ("action", "onReasons", "onExitCodes", "targetComponents")


@dataclass(frozen=True)
class FailurePolicyRule:
    """One rule; an empty condition list matches anything."""

    action: Action
    on_reasons: tuple[str, ...] = ()
    on_exit_codes: tuple[int, ...] = ()
    target_components: tuple[int | str, ...] = ()  # component index or wrapped object name

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.on_reasons:
            out["onReasons"] = list(self.on_reasons)
        if self.on_exit_codes:
            out["onExitCodes"] = list(self.on_exit_codes)
        if self.target_components:
            out["targetComponents"] = list(self.target_components)
        return out


def parse_failure_policy(value: Any, path: str) -> tuple[FailurePolicyRule, ...]:
    """Parse a list of rules (already decoded from YAML/JSON)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FieldError(path, f"must be a list of rules, got {type_name(value)}")
    return tuple(_rule(item, child(path, i)) for i, item in enumerate(value))


def parse_failure_policy_annotation(text: Any, path: str) -> tuple[FailurePolicyRule, ...]:
    """Parse the `batchgate.dev/failure-policy` annotation: a JSON or YAML list of rules."""
    if not isinstance(text, str):
        raise FieldError(path, f"must be a string holding a JSON or YAML list, got {type_name(text)}")
    try:
        check_bounds(text)  # an annotation is the user's text: no alias bombs, no deep nesting
        value = yaml.safe_load(text)
    except LocatedYAMLError as exc:
        raise FieldError(path, exc.detail) from None
    except yaml.YAMLError as exc:
        raise FieldError(path, f"is neither JSON nor YAML: {_first_line(exc)}") from None
    except ValueError as exc:  # an integer with more digits than Python converts
        raise FieldError(path, f"a value cannot be read: {_first_line(exc)}") from None
    if value is None:
        raise FieldError(path, "is empty; expected a list of rules")
    return parse_failure_policy(value, path)


def _rule(value: Any, path: str) -> FailurePolicyRule:
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a mapping with an action, got {type_name(value)}")
    for key in value:
        if key not in _FIELDS:
            raise FieldError(child(path, str(key)), f"unknown field (expected {', '.join(_FIELDS)})")
    action = value.get("action")
    if action not in ACTIONS:
        raise FieldError(child(path, "action"), f"must be one of {', '.join(ACTIONS)}, got {action!r}")
    reasons = sequence(value.get("onReasons"), child(path, "onReasons"))
    for i, reason in enumerate(reasons):
        if reason not in REASONS:
            raise FieldError(
                child(child(path, "onReasons"), i),
                f"unknown reason {reason!r} (expected one of {', '.join(REASONS)})",
            )
    codes = sequence(value.get("onExitCodes"), child(path, "onExitCodes"))
    for i, code in enumerate(codes):
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
            raise FieldError(child(child(path, "onExitCodes"), i), "must be an exit code from 0 to 255")
    targets = sequence(value.get("targetComponents"), child(path, "targetComponents"))
    for i, target in enumerate(targets):
        valid_index = isinstance(target, int) and not isinstance(target, bool) and target >= 0
        if not valid_index and not (isinstance(target, str) and target):
            raise FieldError(
                child(child(path, "targetComponents"), i),
                "must be a component index (>= 0) or a component name",
            )
    return FailurePolicyRule(action, tuple(reasons), tuple(codes), tuple(targets))



def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
