"""Lease leader election (coordination.k8s.io/v1): one controller writes, standbys keep warm caches.

The decision of who holds the Lease is pure (`decisions/leader_election.py`); this loop reads
the Lease, writes what the decision says with the observed resourceVersion (so a race is a 409,
not two leaders), and keeps `is_leader` honest: it turns False the moment a renewal is refused
or the renew deadline passes without a successful renewal — even if this thread is stuck —
so writes stop at once. While it is False the reconcile workers drop their keys, and only
`on_started` offers them again; so a renewal that succeeds after the deadline lapsed (a write
held by an API server waiting for etcd) ends the old term (`on_stopped`) and starts a new one
(`on_started`), never silently resuming the old one.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from batchgate.clock import Clock
from controller.adapters.kube import RESOURCES, ApiError, KubeClient
from controller.decisions.leader_election import LeaseTiming, decide_lease

log = logging.getLogger(__name__)
LEASES = RESOURCES["Lease"]


class LeaderElector:
    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *, clock: Clock,
                 timing: LeaseTiming = LeaseTiming(), on_started: Callable[[], None] = lambda: None,
                 on_stopped: Callable[[], None] = lambda: None) -> None:
        self.client, self.namespace, self.name, self.identity = client, namespace, name, identity
        self.clock, self.timing = clock, timing
        self.on_started, self.on_stopped = on_started, on_stopped
        self.holder = ""
        self._renewed_at: float | None = None  # monotonic time of our last successful write
        self._leading = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self._within_term()

    def _within_term(self) -> bool:
        """Leading, and renewed within the renew deadline (the caller holds the lock)."""
        if not self._leading or self._renewed_at is None:
            return False
        return self.clock.monotonic() - self._renewed_at < self.timing.renew_deadline.total_seconds()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if release and self.is_leader:
            self._release()
        self._set_leading(False)

    def run(self) -> None:
        while not self._stop.is_set():
            self.step()
            self._stop.wait(self.timing.retry_period.total_seconds())

    def step(self) -> bool:
        """One attempt to acquire or renew; returns whether we lead afterwards."""
        try:
            lease = self._read()
            decision = decide_lease(lease, self.identity, self.clock.now(), self.timing)
            if decision.action == "wait":
                self.holder = decision.holder
                self._set_leading(False)
                return False
            body: dict[str, Any] = {"apiVersion": LEASES.api_version, "kind": "Lease",
                                    "metadata": {"name": self.name, "namespace": self.namespace},
                                    "spec": dict(decision.spec or {})}
            if lease is None:
                self.client.create(LEASES, body)
            else:
                body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
                self.client.replace(LEASES, body)
            self.holder = self.identity
            self._renewed()
            return True
        except ApiError as exc:
            if exc.conflict or exc.already_exists:
                log.info("lost the race for lease %s/%s", self.namespace, self.name)
            else:
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            if not self.is_leader:  # past the renew deadline (or never led): step down
                self._set_leading(False)
            return self.is_leader
        except Exception as exc:  # API server unreachable: same rule as a refused renewal
            log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            if not self.is_leader:
                self._set_leading(False)
            return self.is_leader

    def _read(self) -> dict[str, Any] | None:
        try:
            return self.client.get(LEASES, self.name, self.namespace)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def _release(self) -> None:
        """Give the Lease up on a clean shutdown so a standby takes over without waiting 15 s."""
        try:
            lease = self._read()
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                self.client.replace(LEASES, lease)
        except Exception as exc:  # best effort: the lease expires on its own
            log.info("could not release lease: %s", exc)

    def _renewed(self) -> None:
        """Record a successful write of the Lease. If the term lapsed while the write was in flight,
        workers have dropped keys since: end that term before starting the next."""
        with self._lock:
            lapsed = self._leading and not self._within_term()
            if lapsed:
                self._leading = False
            self._renewed_at = self.clock.monotonic()
        if lapsed:
            log.warning("%s renewed lease %s/%s after its renew deadline had passed: its term ended, a new one "
                        "starts", self.identity, self.namespace, self.name)
            self.on_stopped()
        self._set_leading(True)

    def _set_leading(self, leading: bool) -> None:
        with self._lock:
            changed = leading != self._leading
            self._leading = leading
        if changed and leading:
            log.info("%s became leader of %s/%s", self.identity, self.namespace, self.name)
            self.on_started()
        elif changed:
            log.warning("%s stopped leading %s/%s", self.identity, self.namespace, self.name)
            self.on_stopped()
