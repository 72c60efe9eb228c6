"""The script a simulated container follows, read from the pod annotation
`localcluster.batchgate.dev/behavior` (JSON).

    {"startAfter": "2s", "runFor": "30s", "exitCode": 0, "neverReady": false, "crashAfter": "5s"}

startAfter: time from the kubelet seeing the pod to its containers starting (image pull and
  create); runFor: each run lasts this long and exits with exitCode (without it the container
  runs until deleted); crashAfter: each run crashes this long after starting, with exitCode when
  that is non-zero and 1 otherwise (the earlier of runFor and crashAfter ends a run);
  neverReady: running containers never pass readiness. Unknown keys are errors, so a typo is
  reported instead of silently ignored.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Mapping

from localcluster.sim.units import UnitError, parse_duration

BEHAVIOR_ANNOTATION = "localcluster.batchgate.dev/behavior"
_KEYS = ("startAfter", "runFor", "exitCode", "neverReady", "crashAfter")


class BehaviorError(ValueError):
    """The annotation does not parse; the message says which part and why."""


@dataclass(frozen=True)
class Run:
    """How one container run ends: after `length`, with `exit_code`."""

    length: dt.timedelta
    exit_code: int


@dataclass(frozen=True)
class Behavior:
    start_after: dt.timedelta = dt.timedelta(0)
    run_for: dt.timedelta | None = None
    exit_code: int = 0
    never_ready: bool = False
    crash_after: dt.timedelta | None = None

    def run(self) -> Run | None:
        """How every run ends, or None when runs last until the pod is deleted."""
        crash_code = self.exit_code or 1
        if self.crash_after is not None and (self.run_for is None or self.crash_after <= self.run_for):
            return Run(self.crash_after, crash_code)
        if self.run_for is not None:
            return Run(self.run_for, self.exit_code)
        return None


def _duration(raw: Mapping[str, Any], key: str) -> dt.timedelta | None:
    if key not in raw:
        return None
    try:
        return parse_duration(raw[key])
    except UnitError as err:
        raise BehaviorError(f"{key}: {err}") from None


def parse_behavior(annotations: Mapping[str, str] | None) -> Behavior:
    """The pod's behaviour; the default (no annotation) runs ready until deleted."""
    text = (annotations or {}).get(BEHAVIOR_ANNOTATION)
    if text is None:
        return Behavior()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise BehaviorError(f"not JSON: {err.msg} at position {err.pos}") from None
    if not isinstance(raw, dict):
        raise BehaviorError(f"must be a JSON object like {{\"runFor\": \"30s\"}}, got {text!r}")
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise BehaviorError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    exit_code = raw.get("exitCode", 0)
    if isinstance(exit_code, bool) or not isinstance(exit_code, int) or not 0 <= exit_code <= 255:
        raise BehaviorError(f"exitCode: must be an integer from 0 to 255, got {exit_code!r}")
    never_ready = raw.get("neverReady", False)
    if not isinstance(never_ready, bool):
        raise BehaviorError(f"neverReady: must be true or false, got {never_ready!r}")
    return Behavior(
        start_after=_duration(raw, "startAfter") or dt.timedelta(0),
        run_for=_duration(raw, "runFor"),
        exit_code=exit_code,
        never_ready=never_ready,
        crash_after=_duration(raw, "crashAfter"),
    )
