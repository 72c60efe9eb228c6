"""Quota and usage per ClusterQueue and cohort, in integer units, kept current incrementally.

Kueue's arithmetic (docs/quota.md, "Semantics") for flat cohorts: a ClusterQueue keeps
`guaranteed = nominal - lendingLimit` to itself; everything above it is lent to, and used
from, the cohort. Usage is added and removed per workload, so asking "how much is available"
costs O(1) per (flavor, resource) whatever the number of workloads.

`UsageOverlay` lets one scheduling cycle try admissions and preemptions on top of the book
without changing it: the cycle writes deltas into the overlay and the book stays as observed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping

from batchgate.api.kueue import ClusterQueue, from_units, to_units
from batchgate.quantity import format_quantity

FlavorResource = tuple[str, str]  # (flavor, resource)
Usage = dict[FlavorResource, int]
__all__ = ["FlavorResource", "Usage", "QuotaBook", "UsageOverlay", "Quota", "format_units", "quotas_of", "to_units"]


@lru_cache(maxsize=4096)
def format_units(resource: str, units: int) -> str:
    """Units as users write the quantity, remembered: every nomination that does not fit spells
    its request and the room left in its message, and the same few values recur."""
    return format_quantity(from_units(resource, units), resource)


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None

    @property
    def guaranteed(self) -> int:
        """The part of nominal never lent to the cohort."""
        if self.lending_limit is None:
            return 0
        return max(0, self.nominal - self.lending_limit)


_NO_QUOTA = Quota(0, None, None)


def quotas_of(cq: ClusterQueue) -> dict[FlavorResource, Quota]:
    out: dict[FlavorResource, Quota] = {}
    for rg in cq.resource_groups:
        for fq in rg.flavors:
            for rq in fq.resources:
                out[(fq.name, rq.name)] = Quota(
                    to_units(rq.name, rq.nominal),
                    None if rq.borrowing_limit is None else to_units(rq.name, rq.borrowing_limit),
                    None if rq.lending_limit is None else to_units(rq.name, rq.lending_limit),
                )
    return out


class QuotaBook:
    """Quotas, per-CQ usage and per-cohort totals; the only place that does quota arithmetic."""

    def __init__(self) -> None:
        self.quotas: dict[str, dict[FlavorResource, Quota]] = {}
        self.cohort_of: dict[str, str] = {}
        self.usage: dict[str, Usage] = {}
        self.cohort_quota: dict[str, Usage] = {}
        self.cohort_usage: dict[str, Usage] = {}
        self.members: dict[str, set[str]] = {}
        self.weights: dict[str, int] = {}  # fair-sharing weight, milli-units

    # --- structure ---------------------------------------------------------------------------
    def set_cluster_queue(self, cq: ClusterQueue) -> None:
        """Create or replace a ClusterQueue's quotas, keeping the usage it already has."""
        usage = dict(self.usage.get(cq.name, {}))
        self.remove_cluster_queue(cq.name)
        self.quotas[cq.name] = quotas_of(cq)
        self.cohort_of[cq.name] = cq.cohort
        self.weights[cq.name] = to_units("cpu", cq.fair_weight)
        self.usage[cq.name] = {}
        if cq.cohort:
            self.members.setdefault(cq.cohort, set()).add(cq.name)
            total = self.cohort_quota.setdefault(cq.cohort, {})
            for fr, quota in self.quotas[cq.name].items():
                total[fr] = total.get(fr, 0) + quota.nominal - quota.guaranteed
            self.cohort_usage.setdefault(cq.cohort, {})
        self.add_usage(cq.name, usage)

    def remove_cluster_queue(self, name: str) -> Usage:
        """Drop a ClusterQueue; returns the usage it held (its workloads still exist)."""
        if name not in self.quotas:
            return {}
        usage = dict(self.usage[name])
        self.add_usage(name, {fr: -v for fr, v in usage.items()})
        cohort = self.cohort_of.pop(name)
        if cohort:
            total = self.cohort_quota[cohort]
            for fr, quota in self.quotas[name].items():
                total[fr] -= quota.nominal - quota.guaranteed
            self.members[cohort].discard(name)
            if not self.members[cohort]:
                del self.members[cohort], self.cohort_quota[cohort], self.cohort_usage[cohort]
        del self.quotas[name], self.usage[name], self.weights[name]
        return usage

    def quota(self, cq: str, fr: FlavorResource) -> Quota:
        return self.quotas[cq].get(fr, _NO_QUOTA)

    def cohort_members(self, cq: str) -> Iterable[str]:
        cohort = self.cohort_of.get(cq, "")
        return self.members.get(cohort, ()) if cohort else (cq,)

    # --- usage -------------------------------------------------------------------------------
    def add_usage(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        """Add (or, with negative values, remove) usage; cohort totals follow."""
        own = self.usage[cq]
        cohort = self.cohort_of[cq]
        spill = self.cohort_usage[cohort] if cohort else None
        for fr, delta in usage.items():
            if not delta:
                continue
            before = own.get(fr, 0)
            after = before + delta
            own[fr] = after
            if spill is not None:
                g = self.quota(cq, fr).guaranteed
                spill[fr] = spill.get(fr, 0) + max(0, after - g) - max(0, before - g)


class UsageOverlay:
    """Reads the book plus this cycle's tentative changes; never writes to the book."""

    def __init__(self, book: QuotaBook) -> None:
        self.book = book
        self._usage: dict[tuple[str, FlavorResource], int] = {}
        self._cohort: dict[tuple[str, FlavorResource], int] = {}

    def usage(self, cq: str, fr: FlavorResource) -> int:
        return self.book.usage[cq].get(fr, 0) + self._usage.get((cq, fr), 0)

    def _cohort_usage(self, cohort: str, fr: FlavorResource) -> int:
        return self.book.cohort_usage[cohort].get(fr, 0) + self._cohort.get((cohort, fr), 0)

    def add(self, cq: str, usage: Mapping[FlavorResource, int], sign: int = 1) -> None:
        cohort = self.book.cohort_of[cq]
        for fr, value in usage.items():
            delta = sign * value
            if not delta:
                continue
            before = self.usage(cq, fr)
            self._usage[(cq, fr)] = self._usage.get((cq, fr), 0) + delta
            if cohort:
                g = self.book.quota(cq, fr).guaranteed
                key = (cohort, fr)
                self._cohort[key] = self._cohort.get(key, 0) + max(0, before + delta - g) - max(0, before - g)

    def available(self, cq: str, fr: FlavorResource) -> int:
        """What `cq` could still take of `fr` now, borrowing included; never negative."""
        quota = self.book.quota(cq, fr)
        used = self.usage(cq, fr)
        cohort = self.book.cohort_of[cq]
        if not cohort:
            return max(0, quota.nominal - used)
        g = quota.guaranteed
        local = max(0, g - used)
        parent = self.book.cohort_quota[cohort].get(fr, 0) - self._cohort_usage(cohort, fr)
        if quota.borrowing_limit is not None:
            parent = min(parent, (quota.nominal - g) - max(0, used - g) + quota.borrowing_limit)
        return max(0, local + parent)

    def potential_available(self, cq: str, fr: FlavorResource) -> int:
        """The most `cq` could ever hold of `fr` with nothing else running."""
        quota = self.book.quota(cq, fr)
        cohort = self.book.cohort_of[cq]
        if not cohort:
            return quota.nominal
        most = quota.guaranteed + self.book.cohort_quota[cohort].get(fr, 0)
        if quota.borrowing_limit is not None:
            most = min(most, quota.nominal + quota.borrowing_limit)
        return most

    def borrowing_with(self, cq: str, fr: FlavorResource, value: int) -> bool:
        return self.usage(cq, fr) + value > self.book.quota(cq, fr).nominal

    def is_borrowing(self, cq: str, frs: Iterable[FlavorResource]) -> bool:
        if not self.book.cohort_of[cq]:
            return False
        return any(self.borrowing_with(cq, fr, 0) for fr in frs)

    def dominant_resource_share(self, cq: str, change: Mapping[FlavorResource, int] | None = None,
                                sign: int = 1) -> int:
        """Kueue's fair-sharing share: the most-borrowed resource as a fraction of what the cohort
        lends, per 1000, divided by the weight; `change` is a workload added (sign 1) or removed (-1)."""
        cohort = self.book.cohort_of[cq]
        if not cohort:
            return 0
        weight = self.book.weights[cq]
        if weight == 0:
            return sys.maxsize
        change = change or {}
        borrowed: dict[str, int] = {}
        for fr in set(self.book.quotas[cq]) | set(change):
            above = sign * change.get(fr, 0) - (self.book.quota(cq, fr).nominal - self.usage(cq, fr))
            if above > 0:
                borrowed[fr[1]] = borrowed.get(fr[1], 0) + above
        share = -1
        for resource, amount in sorted(borrowed.items()):
            lendable = sum(v for (_, r), v in self.book.cohort_quota[cohort].items() if r == resource)
            if lendable > 0:
                share = max(share, amount * 1000 // lendable)
        return 0 if share < 0 else share * 1000 // weight

    def fits(self, cq: str, usage: Mapping[FlavorResource, int], allow_borrowing: bool = True) -> bool:
        for fr, value in usage.items():
            if not allow_borrowing and self.borrowing_with(cq, fr, value):
                return False
            if value > self.available(cq, fr):
                return False
        return True
