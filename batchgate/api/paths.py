"""Field paths into wire objects: AppWrapper podSet paths and the locations we report.

A podSet path (upstream `getValueAtPath`) starts with `template` and continues with `.field`
or `[index]` steps, e.g. `template.spec.replicatedJobs[0].template.spec.template`. Locations
are the same steps as a tuple, so rules can read and write through them.
"""

from __future__ import annotations

import re
from typing import Any

from batchgate.api.errors import FieldError, type_name

Step = str | int
Location = tuple[Step, ...]

_STEP = re.compile(r"\.([^.\[\]]+)|\[([^\[\]]*)\]")


def parse_podset_path(text: Any, where: str) -> Location:
    """Parse a podSet path into steps; `where` is the field path of the `path` field itself."""
    if not isinstance(text, str) or not text:
        raise FieldError(where, "podspec must specify path")
    if not text.startswith("template"):
        raise FieldError(where, f"first element of the path must be 'template', got {text!r}")
    steps: list[Step] = ["template"]
    pos = len("template")
    while pos < len(text):
        match = _STEP.match(text, pos)
        if not match:
            raise FieldError(where, f"invalid path {text!r}: unexpected {text[pos:]!r}")
        field_name, index = match.groups()
        if field_name is not None:
            steps.append(field_name)
        elif index is not None and index.isdigit():
            steps.append(int(index))
        else:
            raise FieldError(where, f"invalid path {text!r}: index {index!r} is not a non-negative integer")
        pos = match.end()
    return tuple(steps)


def resolve(root: Any, steps: Location, where: str, shown: str, root_name: str = "template") -> dict[str, Any]:
    """Follow `steps` from `root` (called `root_name` in messages); the value must be a mapping.

    `where` is the field path errors are reported at, `shown` the path text the user wrote. The
    path walked so far is spelled out only for an error (every review resolves its pod sets).
    """
    value = root
    for depth, step in enumerate(steps):
        if isinstance(step, int):
            if not isinstance(value, list):
                raise FieldError(where, f"path {shown!r}: {_walked(root_name, steps, depth)} is not an array")
            if step >= len(value):
                at = _walked(root_name, steps, depth)
                raise FieldError(where, f"path {shown!r}: index {step} out of bounds at {at}")
            value = value[step]
        else:
            if not isinstance(value, dict):
                raise FieldError(where, f"path {shown!r}: {_walked(root_name, steps, depth)} is not a map")
            if step not in value:
                raise FieldError(where, f"path {shown!r}: no field {step!r} at {_walked(root_name, steps, depth)}")
            value = value[step]
    if not isinstance(value, dict):
        raise FieldError(where, f"path {shown!r} does not lead to a map, got {type_name(value)}")
    return value


def _walked(root_name: str, steps: Location, depth: int) -> str:
    return format_steps((root_name,) + steps[:depth])


def format_steps(steps: Location) -> str:
    """`("spec", "components", 0, "template")` -> `spec.components[0].template`."""
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            out += f".{step}" if out else step
    return out


def get_at(root: Any, steps: Location) -> Any:
    """The value at `steps`, or None when any step is missing or of the wrong shape."""
    value = root
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not 0 <= step < len(value):
                return None
        elif not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value
