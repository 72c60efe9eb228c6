"""No escape from the queue: the updates that would let a queued workload run outside quota.

Kueue's job webhooks (jobframework/validation.go) keep the queue name immutable while a job is
not suspended, and refuse an empty one where a queue is required. batchgate adds the third
door Kueue leaves to its controller: only the controller un-suspends a queued workload, once its
Workload is admitted. The gateway makes no API calls, so it cannot see the admission; it judges
the sender instead. The controller's identity is exempt (policy `exempt.users`) and never
reaches these rules, so every un-suspend that does is a user's, and is refused. The controller
still suspends again anything queued that runs without admission (decisions/jobs/integration.py).
"""

from __future__ import annotations

from typing import Any

from batchgate import keys
from batchgate.api import objects
from batchgate.api.errors import FieldError
from batchgate.api.paths import format_steps
from batchgate.kinds import QUEUED_BY_QUALIFIED
from batchgate.policy import Policy
from webhook.rules.review import AdmissionRequest

QUEUE_FIELD = f"metadata.labels[{keys.QUEUE_NAME_LABEL}]"


def queue_name(obj: Any) -> str:
    return objects.labels(obj).get(keys.QUEUE_NAME_LABEL) or ""


def is_suspended(obj: Any, kind: str) -> bool:
    return QUEUED_BY_QUALIFIED[kind].is_suspended(obj)


def queue_escape(request: AdmissionRequest, policy: Policy) -> tuple[str, FieldError] | None:
    """(reason, error) for an UPDATE of a top-level queued kind that would leave the queue, else None."""
    kind = request.kind.qualified
    if request.operation != "UPDATE" or kind not in QUEUED_BY_QUALIFIED:
        return None
    old, new = request.old_object, request.object
    if queue_name(old) != queue_name(new) and not is_suspended(new, kind):
        return "QueueNameImmutable", FieldError(
            QUEUE_FIELD, f"cannot change while the {request.kind.kind} is not suspended")
    if queue_name(old) and not queue_name(new) and kind in policy.queues.require_queue_for:
        return "QueueRequired", FieldError(QUEUE_FIELD, f"{request.kind.kind} needs a LocalQueue label")
    if queue_name(old) and is_suspended(old, kind) and not is_suspended(new, kind):
        return "UnsuspendRefused", FieldError(
            format_steps(QUEUED_BY_QUALIFIED[kind].suspend_path),
            f"a queued {request.kind.kind} is un-suspended by the batchgate controller once its Workload is admitted")
    return None
