"""Who leads: the Lease rules of client-go's leader election, as a pure function of the observed Lease.

A candidate takes a Lease that is free or expired (renewTime + leaseDurationSeconds in the past),
the holder renews it; anyone else waits. The adapter performs the write the decision names,
with the Lease's resourceVersion, so two candidates racing for it cannot both win.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Mapping

from batchgate.clock import parse_time


LEASE_NAMESPACE = "batchgate-system"
LEASE_NAME = "batchgate-controller"
"""The controller's Lease by default; `kubectl batchgate why` reads it to tell whether one runs."""


@dataclass(frozen=True)
class LeaseTiming:
    """client-go's defaults, as docs/controller.md ("Runtime") gives them for batchgate."""

    lease_duration: dt.timedelta = dt.timedelta(seconds=15)
    renew_deadline: dt.timedelta = dt.timedelta(seconds=10)
    retry_period: dt.timedelta = dt.timedelta(seconds=2)


@dataclass(frozen=True)
class LeaseDecision:
    action: str  # create | acquire | renew | wait
    spec: Mapping[str, Any] | None  # the Lease spec to write, None for wait
    holder: str  # who holds it after a successful write (or now, for wait)
    reason: str


def micro_time(instant: dt.datetime) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds and a Z."""
    utc = instant.astimezone(dt.timezone.utc)
    return f"{utc.replace(tzinfo=None).isoformat(timespec='microseconds')}Z"


def lease_expired(spec: Mapping[str, Any], now: dt.datetime) -> bool:
    renewed = spec.get("renewTime") or spec.get("acquireTime")
    duration = spec.get("leaseDurationSeconds")
    if not renewed or not isinstance(duration, int):
        return True
    return parse_time(renewed) + dt.timedelta(seconds=duration) < now


def decide_lease(lease: Mapping[str, Any] | None, identity: str, now: dt.datetime, timing: LeaseTiming) -> LeaseDecision:
    seconds = int(timing.lease_duration.total_seconds())
    stamp = micro_time(now)
    spec: dict[str, Any]
    if lease is None:
        spec = {"holderIdentity": identity, "leaseDurationSeconds": seconds, "acquireTime": stamp,
                "renewTime": stamp, "leaseTransitions": 0}
        return LeaseDecision("create", spec, identity, "no lease yet")
    spec = dict(lease.get("spec") or {})
    holder = str(spec.get("holderIdentity") or "")
    if holder == identity:
        spec.update(renewTime=stamp, leaseDurationSeconds=seconds)
        return LeaseDecision("renew", spec, identity, "holder renews")
    if holder and not lease_expired(spec, now):
        return LeaseDecision("wait", None, holder, f"held by {holder}")
    previous = spec.get("leaseTransitions")
    # Every change of holder counts, a released Lease too (as client-go's leaderelection does).
    transitions = (previous if isinstance(previous, int) else 0) + 1
    spec.update(holderIdentity=identity, leaseDurationSeconds=seconds, acquireTime=stamp, renewTime=stamp,
                leaseTransitions=transitions)
    return LeaseDecision("acquire", spec, identity, f"lease of {holder} expired" if holder else "lease is free")
