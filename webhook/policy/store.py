"""The policy a worker answers with: swapped whole, read without locks.

Request threads read `store.current` once per request (one attribute read, atomic under the
GIL); reloader threads replace it with a new immutable `LoadedPolicy`. An invalid policy never
replaces a good one: it is counted, logged, and kept as `last_error` for `/readyz` to show.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping

from batchgate.policy import DEFAULT_POLICY, Policy

log = logging.getLogger("batchgate.webhook.policy")


@dataclass(frozen=True)
class LoadedPolicy:
    """A policy with where it came from and its version computed once (audit lines carry it)."""

    policy: Policy
    source: str
    version: str = ""

    @classmethod
    def of(cls, policy: Policy, source: str) -> "LoadedPolicy":
        return cls(policy, source, policy.version)


DEFAULTS = LoadedPolicy.of(DEFAULT_POLICY, "built-in defaults")


@dataclass
class PolicyStore:
    """The current policy, namespace labels for `managedNamespaces.selector`, and readiness."""

    current: LoadedPolicy | None = None
    last_error: str = ""
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    """Labels by namespace from a Namespace watch; None without one (every namespace managed)."""
    on_loaded: Callable[[LoadedPolicy], None] = lambda loaded: None
    on_rejected: Callable[[str, str], None] = lambda source, error: None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def ready(self) -> bool:
        return self.current is not None

    def install(self, loaded: LoadedPolicy) -> None:
        """Make `loaded` the policy for every request from now on."""
        with self._lock:
            changed = self.current is None or self.current.version != loaded.version
            self.current = loaded
            self.last_error = ""
        if changed:
            log.info("policy %s loaded from %s", loaded.version, loaded.source)
            self.on_loaded(loaded)

    def reject(self, source: str, error: str) -> None:
        """Record an invalid policy; the last good one stays in force."""
        with self._lock:
            self.last_error = error
            kept = self.current.version if self.current else "none"
        log.error("invalid policy from %s, keeping policy %s: %s", source, kept, error)
        self.on_rejected(source, error)
