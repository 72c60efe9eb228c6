"""gunicorn serving the gateway over TLS: worker model, hooks, and per-worker start-up.

Worker model: gthread workers (one process per core, a few threads each). They keep connections
alive, which the API server relies on (it reuses connections to a webhook), and the sync worker
cannot; bench/webhook_load.py measures the choice. Our subclass (`webhook/serving/worker.py`) accepts
only a worker's share of the connections, so kept-alive connections do not pile up on one
process (webhook/serving/balance.py); `pre_fork` hands each worker its slot in the shared table.

Per worker, after fork (`post_fork`): a fresh `PolicyStore` and its reloader thread (threads do
not survive fork), the audit log descriptor, metrics, and a `ReloadingContext` that gunicorn's
`ssl_context` hook asks on every new connection, so rotated certificates are served without a
restart. The master only binds, forks and reaps; `child_exit` clears a dead worker's metric files
and `on_exit` removes the run's metrics directory.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from batchgate.collector import settle_started_process
from batchgate.policy import DEFAULT_POLICY_CONFIGMAP
from certs.authority import TLS_CERT, TLS_KEY
from webhook.authorization.cache import ANSWER_TTL
from webhook.serving.app import GatewayContext, create_app
from webhook.serving.audit import AuditLog
from webhook.serving.balance import ConnectionTable
from webhook.serving.metrics import MULTIPROC_ENV, GatewayMetrics, worker_exited
from webhook.policy.file import PolicyFileWatcher
from webhook.policy.store import DEFAULTS, PolicyCache, PolicyStore
from webhook.serving.tls import ReloadingContext
from webhook.serving.readahead import MAX_CONNECTIONS
from webhook.serving.worker import BalancedThreadWorker

POLICY_CACHE_NAME = "last-good-policy.yaml"

IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True)
class ServerOptions:
    """What `batchgate webhook` was asked to serve."""

    cert_dir: Path
    port: int
    host: str = "127.0.0.1"
    workers: int = 2
    threads: int = 8
    worker_class: str = "gthread"
    policy_file: Path | None = None
    policy_configmap: tuple[str, str] | None = None
    audit_log: str | None = None
    kubeconfig: str | None = None
    log_level: str = "info"
    max_connections: int = MAX_CONNECTIONS
    """Connections one worker holds before it closes the oldest still sending (readahead.py)."""
    policy_cache: Path | None = None
    """Where workers keep the last good policy (default: in this run's metrics directory, so it
    outlives a worker restart but not the gateway)."""
    authorization_ttl: float = ANSWER_TTL

    @property
    def certfile(self) -> Path:
        return self.cert_dir / TLS_CERT

    @property
    def keyfile(self) -> Path:
        return self.cert_dir / TLS_KEY


def start_policy_source(options: ServerOptions, store: PolicyStore) -> Any:
    """Begin filling `store` from the chosen source; returns the running watcher (or None)."""
    if options.policy_file is not None:
        return PolicyFileWatcher(options.policy_file, store).start()
    if options.policy_configmap is not None:
        from webhook.policy.reloader import ClusterPolicySource  # the kubernetes client, only when asked for

        return ClusterPolicySource(store, options.policy_configmap, kubeconfig=options.kubeconfig).start()
    store.install(DEFAULTS)
    return None


def connect_reviewer(options: ServerOptions) -> Any:
    """The API server connection for authorization SubjectAccessReviews, when the gateway has one:
    a --kubeconfig, the --policy-configmap's connection, or running in a cluster. None otherwise
    (AppWrappers that need the check are then denied, saying why)."""
    if options.kubeconfig is None and options.policy_configmap is None and not os.environ.get(IN_CLUSTER_ENV):
        return None
    from webhook.authorization.kube import connected_reviewer  # the kubernetes client, only when asked for

    return connected_reviewer(options.kubeconfig)


class GatewayServer(BaseApplication):
    """`gunicorn 'webhook.serving.app:create_app(...)'` with our options, started from Python."""

    def __init__(self, options: ServerOptions):
        self.options = options
        self.context: GatewayContext | None = None
        self.policy_source: Any = None
        self.tls: ReloadingContext | None = None
        # In the master, before any fork: room for every worker plus replacements being started.
        self.connections = ConnectionTable(2 * options.workers + 2, reserved=options.workers)
        super().__init__()

    def load_config(self) -> None:
        o = self.options
        settings = {
            "bind": [f"{o.host}:{o.port}"],
            "workers": o.workers,
            "worker_class": BalancedThreadWorker if o.worker_class == "gthread" else o.worker_class,
            "threads": o.threads,
            # Our own cap, with eviction of the oldest connection still sending (readahead.py).
            "worker_connections": o.max_connections + 1,
            # Longer than the client's idle timeout (Go's http.Transport: 90 s), so the API server closes
            # idle connections first and never sends a review into one we are closing.
            "keepalive": 120,
            "certfile": str(o.certfile),
            "keyfile": str(o.keyfile),
            "ssl_context": self._ssl_context,
            "pre_fork": self._pre_fork,
            "post_fork": self._post_fork,
            "child_exit": self._child_exit,
            "worker_exit": self._worker_exit,
            "when_ready": self._when_ready,
            "on_exit": self._on_exit,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": o.log_level,
            "proc_name": "batchgate-webhook",
            "graceful_timeout": 5,
            "limit_request_line": 8190,
            # One fixed path per user ($HOME/.gunicorn/gunicorn.ctl) would be shared by every
            # gateway on the machine (tests run several); nothing here uses gunicornc.
            "control_socket_disable": True,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        assert self.context is not None, "post_fork builds the worker's context before the app loads"
        app = create_app(self.context)
        # Everything loaded so far (flask, the rules, maybe the kubernetes client) lives as long
        # as the worker: kept out of the cyclic collector, whose full passes would otherwise walk
        # it all and show up as latency spikes under load.
        settle_started_process()
        return app

    # --- hooks ------------------------------------------------------------------------------
    def _pre_fork(self, server: Any, worker: Any) -> None:
        """In the master: give the worker-to-be its slot in the shared connection table."""
        worker.connection_table = self.connections
        worker.connection_slot = self.connections.claim()

    def _post_fork(self, server: Any, worker: Any) -> None:
        logging.basicConfig(level=self.options.log_level.upper(), stream=sys.stderr,
                            format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")
        self.context = GatewayContext(
            store=PolicyStore(cache=PolicyCache(self._policy_cache_path())),
            audit=AuditLog(self.options.audit_log),
            policy_configmap=self.options.policy_configmap or DEFAULT_POLICY_CONFIGMAP,
            reviewer=connect_reviewer(self.options),
            authorization_ttl=self.options.authorization_ttl,
            metrics=GatewayMetrics(self.options.cert_dir),
        )
        self.tls = ReloadingContext(self.options.certfile, self.options.keyfile)
        self.policy_source = start_policy_source(self.options, self.context.store)

    def _policy_cache_path(self) -> Path:
        if self.options.policy_cache is not None:
            return self.options.policy_cache
        run_dir = os.environ.get(MULTIPROC_ENV)
        return Path(run_dir) / POLICY_CACHE_NAME if run_dir else Path(tempfile.gettempdir()) / POLICY_CACHE_NAME

    def _ssl_context(self, conf: Any, default_factory: Any) -> Any:
        if self.tls is None:  # the master never serves, but be safe
            self.tls = ReloadingContext(self.options.certfile, self.options.keyfile)
        return self.tls.get()

    def _worker_exit(self, server: Any, worker: Any) -> None:
        """In the worker, on its way out: stop watching and close the audit descriptor."""
        if self.policy_source is not None:
            self.policy_source.stop()
        if self.context is not None:
            self.context.audit.close()

    def _child_exit(self, server: Any, worker: Any) -> None:
        worker_exited(worker.pid)
        if getattr(worker, "connection_slot", None) is not None:
            self.connections.release(worker.connection_slot)

    def _when_ready(self, server: Any) -> None:
        for listener in server.LISTENERS:
            host, port = listener.sock.getsockname()[:2]
            print(f"batchgate webhook serving https://{host}:{port} with {self.options.workers} workers",
                  file=sys.stderr, flush=True)

    def _on_exit(self, server: Any) -> None:
        directory = os.environ.get(MULTIPROC_ENV)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
