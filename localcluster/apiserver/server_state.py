"""What the verb handlers (reads, writes, watching, patches, special requests) need of the server.

They take this protocol, not `ApiServer`, so the server module imports them and none of them
imports it back: the request path is one direction, server -> verbs -> pipeline -> store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from localcluster.apiserver.admission import WebhookDispatcher
from localcluster.authorization import Authorizer
from localcluster.clock import TimeSource
from localcluster.resources import Registry
from localcluster.store import Store
from localcluster.users import Authenticator


class ServerState(Protocol):
    """The cluster state one request works on, and the few server settings verbs read."""

    store: Store
    registry: Registry  # the served resources: built-ins and established CRDs
    clock: TimeSource
    webhooks: WebhookDispatcher | None  # None until the cluster wires admission (and in bare-server tests)
    bookmark_interval: float  # seconds between watch BOOKMARK events
    watch_timeout_range: tuple[float, float]  # a watch without timeoutSeconds ends at a random point in it
    auth: Authenticator  # who is who: tokens for users and service accounts (TokenRequest signs with it)
    pod_logs_dir: Path | None  # where process pods' container logs are (the kubelets'); None: none run
    authorizer: Authorizer  # RBAC (or AlwaysAllow): who may do what, and the access reviews
