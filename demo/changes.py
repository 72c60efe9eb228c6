"""What admission changed: the object a user submitted against the object the API server returned.

Pure. Fields the API server always sets (uid, timestamps, resourceVersion, status, kubectl's
last-applied annotation) are not changes anyone asked about, so they are left out; what is left
of a custom resource is the gateway's doing. A built-in kind is also defaulted by the API server
(a Job's backoffLimit, its controller-uid labels, each container's imagePullPolicy): the
gateway's share is what differs from the same submission stored without the gateway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SERVER_SET = frozenset({
    "/metadata/uid", "/metadata/creationTimestamp", "/metadata/generation", "/metadata/resourceVersion",
    "/metadata/namespace", "/metadata/name", "/metadata/selfLink",
    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
})
SERVER_SET_TREES = ("/metadata/managedFields", "/status")


@dataclass(frozen=True)
class Change:
    """One leaf that differs: `before` is None when the submitted object did not have it."""

    path: str  # a JSON Pointer, e.g. /metadata/labels/kueue.x-k8s.io~1queue-name
    before: Any
    after: Any
    removed: bool = False

    @property
    def key(self) -> str:
        """The last path segment, unescaped (a label key, or a field name)."""
        return self.path.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(JSON Pointer, value) for every scalar in `value`; an empty map or list holds nothing to report."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, f"{path}/{_escape(str(key))}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from leaves(child, f"{path}/{index}")
    else:
        yield path, value


def _server_set(path: str) -> bool:
    return path in SERVER_SET or path.startswith(SERVER_SET_TREES)


def admission_changes(submitted: dict[str, Any], stored: dict[str, Any]) -> list[Change]:
    """Leaves added or changed on the way in, then leaves removed, each in document order."""
    before = dict(leaves(submitted))
    after = dict(leaves(stored))
    changed = [Change(p, before.get(p), v) for p, v in after.items() if not _server_set(p) and before.get(p, ...) != v]
    removed = [Change(p, v, None, removed=True) for p, v in before.items() if not _server_set(p) and p not in after]
    return changed + removed


def _uid_aside(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with every value equal to its own uid (a Job's controller-uid labels) made one placeholder."""
    uid = (obj.get("metadata") or {}).get("uid")
    text = json.dumps(obj)
    return json.loads(text.replace(json.dumps(uid), json.dumps("<uid>"))) if isinstance(uid, str) and uid else obj


def gateway_changes(submitted: dict[str, Any], stored: dict[str, Any], ungated: dict[str, Any]) -> list[Change]:
    """The changes from `submitted` to `stored` that `ungated` (the same submission stored by a user
    the gateway exempts: the API server's own doing) does not show too."""
    server = {(c.path, json.dumps(c.after), c.removed) for c in admission_changes(submitted, _uid_aside(ungated))}
    return [c for c in admission_changes(submitted, _uid_aside(stored))
            if (c.path, json.dumps(c.after), c.removed) not in server]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def summarize(changes: list[Change]) -> str:
    """`user=alice, schedulerName=default-scheduler (x2), removed spec/x`: one line for a narration."""
    if not changes:
        return "unchanged"
    counts: dict[str, int] = {}
    for change in changes:
        item = f"removed {change.key}" if change.removed else f"{change.key}={_text(change.after)}"
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(item if n == 1 else f"{item} (x{n})" for item, n in counts.items())
