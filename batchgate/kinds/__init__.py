"""The registry of kinds: everything batchgate knows about a kind is in its module here.

Each module (job.py, pytorchjob.py, raycluster.py, rayjob.py, appwrapper.py, and the kinds an
AppWrapper wraps) defines one `Kind`: its group/version, plural, suspend path when queued, and
one function that finds its pod templates and counts their pods, and for a queued kind Kueue's
Finished and IsActive. The gateway and the controller (and the dashboard, through the
controller's RESOURCES) read kinds from here only; docs/kinds.md says how to add one.
"""

from __future__ import annotations

from typing import Any, Mapping

from batchgate.api.objects import api_version_kind
from batchgate.kinds.appwrapper import APPWRAPPER
from batchgate.kinds.apps import DEPLOYMENT, STATEFULSET
from batchgate.kinds.job import JOB
from batchgate.kinds.jobset import JOBSET
from batchgate.kinds.leaderworkerset import LEADERWORKERSET
from batchgate.kinds.model import LENIENT, STRICT, Kind, PodSet, Reader, Resource
from batchgate.kinds.pod import POD
from batchgate.kinds.pytorchjob import PYTORCHJOB
from batchgate.kinds.raycluster import RAYCLUSTER
from batchgate.kinds.rayjob import RAYJOB
from batchgate.kinds.wrapped import WRAPPABLE

__all__ = ["APPWRAPPER", "DEPLOYMENT", "JOB", "JOBSET", "LEADERWORKERSET", "LENIENT", "POD", "PYTORCHJOB",
           "RAYCLUSTER", "RAYJOB", "STATEFULSET", "STRICT", "ALL", "QUEUED", "Kind", "PodSet", "Reader", "Resource",
           "QUEUED_BY_QUALIFIED", "kind_of"]

ALL: tuple[Kind, ...] = (*WRAPPABLE, APPWRAPPER)

QUEUED: Mapping[str, Kind] = {k.kind: k for k in ALL if k.queued}
"""The kinds batchgate queues (a Workload, a gang, suspended until admitted), by kind name."""

QUEUED_BY_QUALIFIED: Mapping[str, Kind] = {k.qualified: k for k in QUEUED.values()}
"""The same, by `Kind.group` name, as admission requests and the policy name kinds."""

_BY_API_VERSION_KIND: Mapping[tuple[str, str], Kind] = {(k.api_version, k.kind): k for k in ALL}


def kind_of(obj: Any) -> Kind | None:
    """The registered kind of a wire object, by its exact apiVersion and kind."""
    return _BY_API_VERSION_KIND.get(api_version_kind(obj))

