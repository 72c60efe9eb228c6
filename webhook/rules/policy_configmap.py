"""The gateway guards its own policy: an invalid policy.yaml edit is denied, with line and field."""

from __future__ import annotations

from typing import Any

from batchgate.api import objects
from batchgate.api.errors import FieldError, type_name
from batchgate.policy import POLICY_KEY, PolicyError, parse_policy


def is_policy_configmap(kind: str, namespace: str, obj: Any, configmap: tuple[str, str]) -> bool:
    name = objects.metadata(obj).get("name")
    return kind == "ConfigMap" and (namespace, name) == configmap


def check_policy_configmap(obj: Any) -> str | None:
    """None when the ConfigMap holds a valid policy, else the located error."""
    data = obj.get("data") if isinstance(obj, dict) else None
    if data is None:
        return f"data: the policy ConfigMap needs a {POLICY_KEY!r} key"
    if not isinstance(data, dict):
        return str(FieldError("data", f"must be a mapping, got {type_name(data)}"))
    if POLICY_KEY not in data:
        return f"data: the policy ConfigMap needs a {POLICY_KEY!r} key"
    try:
        parse_policy(data[POLICY_KEY], f"data[{POLICY_KEY}]")
    except PolicyError as exc:
        return str(exc)
    return None
