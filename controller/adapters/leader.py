"""Lease leader election (coordination.k8s.io/v1): one controller writes, standbys keep warm caches.

The decision of who holds the Lease is pure (`decisions/leader_election.py`); this loop reads
the Lease, writes what the decision says with the observed resourceVersion (so a race is a 409,
not two leaders), and keeps `is_leader` honest: it turns False the moment a renewal is refused
or the renew deadline passes without a successful renewal — even if this thread is stuck —
so writes stop at once.
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
            with self._lock:
                self._renewed_at = self.clock.monotonic()
            self._set_leading(True)
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
