"""The policy ConfigMap, read with one meaning by every process (gateway, controller, keeper).

No ConfigMap means the built-in defaults: nothing was configured. A ConfigMap without the
`policy.yaml` key is an invalid policy, as a misspelled field is (docs/policy.md), and as the
gateway's own rule for that ConfigMap already says when it denies such an edit: an admin who
wrote `policy.yml`, or emptied `data`, meant something, and falling back to the defaults would
hide it. So the last good policy stays in force, and every process reports the error the same
way: a log line naming the fix, `batchgate_policy_errors_total{source}`, and a Warning Event
`InvalidPolicy` on the ConfigMap saying what the reporter keeps using.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

from batchgate.api.objects import metadata
from batchgate.events import Involved, event_body
from batchgate.policy import DEFAULT_POLICY, POLICY_KEY, Policy, PolicyError, configmap_fix, parse_policy

INVALID_POLICY = "InvalidPolicy"
EVENT_ERROR_CHARS = 800
"""An Event message is at most 1 KiB; the error is cut to leave room for what is kept in force."""


def configmap_source(namespace: str, name: str) -> str:
    """How logs, metrics, probes and errors name the policy ConfigMap."""
    return f"configmap {namespace}/{name}"


def policy_from_configmap(configmap: Mapping[str, Any] | None, namespace: str, name: str) -> Policy:
    """The policy `configmap` holds, the built-in defaults when there is none; PolicyError when
    it has no `policy.yaml` key or that key does not hold a valid policy."""
    if configmap is None:
        return DEFAULT_POLICY
    source = configmap_source(namespace, name)
    data = configmap.get("data") or {}
    if not isinstance(data, Mapping) or POLICY_KEY not in data:
        raise PolicyError(source, None, "data", f"ConfigMap has no {POLICY_KEY!r} key")
    return parse_policy(data[POLICY_KEY], source)


def rejection(error: Exception | str, namespace: str, name: str) -> str:
    """The error as every process reports it: what is wrong, then how to fix it."""
    return f"{error}; {configmap_fix(namespace, name)}"


def invalid_policy_event(configmap: Mapping[str, Any] | None, namespace: str, name: str, error: str, keeps: str,
                         component: str, now: _dt.datetime) -> dict[str, Any]:
    """The Warning Event on the ConfigMap, so `kubectl describe` shows why an edit did not take and
    what `component` keeps using instead. Named after the component, the ConfigMap's version and
    the error: a component's workers and replicas, which all see the same edit, make one Event
    between them (the second create is a 409), and each component makes its own."""
    meta = metadata(configmap or {})
    version = str(meta.get("resourceVersion", ""))
    involved = Involved("v1", "ConfigMap", name, namespace, meta.get("uid"), version)
    return event_body(namespace, involved, "Warning", INVALID_POLICY, f"{error[:EVENT_ERROR_CHARS]}; {keeps}",
                      f"{component}\n{version}\n{error}", now, component)
