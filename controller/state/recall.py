"""Results of pure computations over one cohort of the quota state, kept while its inputs stand.

A head's nomination (flavor assignment, victim search) reads its own requests and priority, the
objects every nomination reads (queues, flavors, namespaces, priority classes) and the usage and
held workloads of its cohort, nothing else. In a deep backlog the cycles that follow a finish try
head after head of the same few shapes against a cohort that has not changed since the last one
failed; `QuotaState.nomination_scope` names the inputs, and a result computed under them is
recalled instead of computed again until they move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, TypeVar, cast

T = TypeVar("T")

MAX_KEPT = 4096  # results per scope; a scope over it starts afresh (bounded memory whatever the shapes)


@dataclass(slots=True)
class Kept:
    """What one scope's current version has computed so far."""

    version: Hashable
    results: dict[Hashable, object] = field(default_factory=dict)
    reads_now: bool | None = None  # whether a result here depends on the time (decided on first use)


class Recall:
    def __init__(self) -> None:
        self._scopes: dict[Hashable, Kept] = {}

    def kept(self, scope: Hashable, version: Hashable) -> Kept:
        """The results computed in `scope` under `version`; none once it has moved."""
        kept = self._scopes.get(scope)
        if kept is None or kept.version != version or len(kept.results) >= MAX_KEPT:
            kept = self._scopes[scope] = Kept(version)
        return kept

    def clear(self) -> None:
        self._scopes.clear()

    def one(self, scope: Hashable, version: Hashable, compute: Callable[[], T]) -> T:
        """The single result of `scope` under `version`, computed if it has moved."""
        results = self.kept(scope, version).results
        if scope not in results:
            results[scope] = compute()
        return cast(T, results[scope])
