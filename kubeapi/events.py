"""Recording an Event that is named after what it reports (batchgate/events.py's bodies)."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from batchgate.api.objects import metadata
from kubeapi.client import EVENTS, ApiError, KubeClient

log = logging.getLogger(__name__)


def record_event(client: KubeClient, body: Mapping[str, Any]) -> None:
    """Create the Event; best effort (a failure is logged, never raised). A 409 means another
    worker or replica already reported the same thing: the Event is there."""
    involved = body.get("involvedObject") or {}
    try:
        client.create(EVENTS, body, metadata(body).get("namespace"))
    except ApiError as exc:
        if exc.status != 409:
            log.warning("cannot record Event %s on %s %s: %s", body.get("reason"), involved.get("kind"),
                        involved.get("name"), exc)
    except Exception as exc:  # noqa: BLE001 - network errors of every kind: the report is best effort
        log.warning("cannot record Event %s on %s %s: %s", body.get("reason"), involved.get("kind"),
                    involved.get("name"), exc)
