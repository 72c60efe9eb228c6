"""The policy a worker answers with: swapped whole, read without locks.

Request threads read `store.current` once per request (one attribute read, atomic under the
GIL); reloader threads replace it with a new immutable `LoadedPolicy`. An invalid policy never
replaces a good one: it is counted, logged, and kept as `last_error` for `/readyz` to show.

A bad policy never leaves a worker without one either: every good policy is also written to a
`PolicyCache` file beside the process, and a worker whose first policy is invalid (a restarted
worker, a ConfigMap stored while the gateway was down) serves the cached last good policy, or
the built-in defaults when there never was one. Defaults standing in for a policy that never
loaded are not the operator's policy: the store is then not `ready` (`/readyz` answers 503 with
the error), so the pods show it, until a valid policy arrives.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import yaml

from batchgate.policy import DEFAULT_POLICY, Policy, PolicyError, parse_policy

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


@dataclass(frozen=True)
class PolicyCache:
    """The last good policy in a file, written whole (a temporary file renamed over it), so a
    reader sees the previous version or the new one, never half of one."""

    path: Path

    def save(self, loaded: LoadedPolicy) -> None:
        text = yaml.safe_dump({"source": loaded.source, "policy": loaded.policy.to_wire()}, sort_keys=False)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".policy-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.error("cannot keep the last good policy in %s: %s", self.path, exc)

    def load(self) -> LoadedPolicy | None:
        """The cached policy, or None when there is none (or it does not read back)."""
        try:
            document = yaml.safe_load(self.path.read_text(encoding="utf-8"))
            policy = parse_policy(yaml.safe_dump(document["policy"]), str(self.path))
            return LoadedPolicy.of(policy, f"last good policy (from {document['source']}, kept in {self.path})")
        except FileNotFoundError:
            return None
        except (OSError, yaml.YAMLError, PolicyError, KeyError, TypeError) as exc:
            log.error("cannot read the last good policy from %s: %s", self.path, exc)
            return None


@dataclass
class PolicyStore:
    """The current policy, namespace labels for `managedNamespaces.selector`, and readiness."""

    current: LoadedPolicy | None = None
    last_error: str = ""
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    """Labels by namespace from a Namespace watch; None without one (every namespace managed)."""
    on_loaded: Callable[[LoadedPolicy], None] = lambda loaded: None
    on_rejected: Callable[[str, str], None] = lambda source, error: None
    cache: PolicyCache | None = None
    """Where every installed policy is kept for a worker that starts with an invalid one."""
    standing_in: bool = False
    """The built-in defaults are in force only because no valid policy was ever loaded."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def ready(self) -> bool:
        return self.current is not None and not self.standing_in

    def install(self, loaded: LoadedPolicy) -> None:
        """Make `loaded` the policy for every request from now on."""
        with self._lock:
            changed = self.current is None or self.current.version != loaded.version
            self.current = loaded
            self.last_error = ""
            self.standing_in = False
        if changed:
            log.info("policy %s loaded from %s", loaded.version, loaded.source)
            if self.cache is not None:
                self.cache.save(loaded)
            self.on_loaded(loaded)

    def reject(self, source: str, error: str) -> LoadedPolicy:
        """Record an invalid policy; the last good one stays in force. A store that has none
        yet takes the cached last good policy, else the built-in defaults. Returns the policy
        now in force."""
        with self._lock:
            fallback = None
            if self.current is None:
                cached = self.cache.load() if self.cache is not None else None
                fallback = cached or DEFAULTS
                self.current = fallback
                self.standing_in = cached is None
            self.last_error = error
            in_force = self.current
        if fallback is not None:
            log.error("invalid policy from %s and none loaded before: serving %s (policy %s)%s: %s",
                      source, fallback.source, fallback.version,
                      ", not Ready until a valid one arrives" if fallback is DEFAULTS else "", error)
            self.on_loaded(fallback)
        else:
            log.error("invalid policy from %s, keeping policy %s: %s", source, in_force.version, error)
        self.on_rejected(source, error)
        return in_force
