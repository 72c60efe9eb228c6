"""The policy from a ConfigMap, and Namespace labels, kept current by list + watch.

The only webhook module that talks to the API server, and never on the request path: each
gunicorn worker runs these watches in daemon threads (started after fork) and the request
threads read what they left in the `PolicyStore`.

Both watches are kubeapi/listwatch.py's loop: list, watch from the list's resourceVersion,
resume from the last version seen, list again on 410 Gone and every `RELIST_SECONDS`, back off
on errors. The ConfigMap means what batchgate/policy_configmap.py says: absent, the built-in
defaults; without its key or invalid, the last good policy stays in force, and the error is
logged, counted and recorded as an Event on the ConfigMap.
"""

from __future__ import annotations

import logging
from typing import Any

from kubernetes import client, config

from batchgate.clock import Clock, SystemClock
from batchgate.policy import PolicyError
from batchgate.policy_configmap import (configmap_source, invalid_policy_event, policy_from_configmap,
                                        rejection)
from kubeapi.client import CONFIGMAPS, NAMESPACES, KubeClient
from kubeapi.events import record_event
from kubeapi.listwatch import RELIST_SECONDS, ListReason, ListWatch
from webhook.policy.store import DEFAULTS, LoadedPolicy, PolicyStore

log = logging.getLogger("batchgate.webhook.policy")

BACKOFF_FIRST = 0.5
"""Seconds to wait after a failed list or watch, doubling up to kubeapi's maximum."""
EVENT_COMPONENT = "batchgate-webhook"


def api_client(kubeconfig: str | None) -> client.ApiClient:
    """From a kubeconfig file, else in-cluster, else ~/.kube/config."""
    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)
    try:
        config.load_incluster_config()
        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config()


def _namespace_labels(namespace: Any) -> tuple[str, dict[str, str]] | None:
    """(name, labels) of a Namespace as the watch delivers it; None for anything malformed."""
    meta = namespace.get("metadata") if isinstance(namespace, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None
    labels = meta.get("labels") or {}
    return meta["name"], dict(labels) if isinstance(labels, dict) else {}


class ClusterPolicySource:
    """Watches the policy ConfigMap and all Namespaces' labels into a `PolicyStore`."""

    def __init__(self, store: PolicyStore, configmap: tuple[str, str], kubeconfig: str | None = None,
                 api: client.ApiClient | None = None, clock: Clock | None = None):
        self.store = store
        self.clock = clock or SystemClock()
        self.namespace, self.name = configmap
        self.source = configmap_source(self.namespace, self.name)
        self.client = KubeClient(api or api_client(kubeconfig))
        self._labels: dict[str, dict[str, str]] = {}
        self.watches = (
            ListWatch(self.client, CONFIGMAPS, self._configmap_listed, self._configmap_event, clock=self.clock,
                      name="policy configmap", namespace=self.namespace, field_selector=f"metadata.name={self.name}",
                      relist_every=RELIST_SECONDS, min_backoff=BACKOFF_FIRST),
            ListWatch(self.client, NAMESPACES, self._namespaces_listed, self._namespace_event, clock=self.clock,
                      name="namespaces", relist_every=RELIST_SECONDS, min_backoff=BACKOFF_FIRST),
        )

    # --- the policy ConfigMap ---------------------------------------------------------------
    def _apply_configmap(self, configmap: dict[str, Any] | None) -> None:
        """Install what the ConfigMap holds; whatever it holds, the watch goes on."""
        try:
            policy = policy_from_configmap(configmap, self.namespace, self.name)
        except PolicyError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a policy we cannot even read must not stop the watch
            log.exception("reading the policy from %s failed", self.source)
            error = f"{self.source}: the policy cannot be read ({type(exc).__name__})"
        else:
            self.store.install(DEFAULTS if configmap is None else LoadedPolicy.of(policy, self.source))
            return
        error = rejection(error, self.namespace, self.name)
        in_force = self.store.reject(self.source, error)
        keeps = f"the gateway keeps serving {in_force.source} (policy {in_force.version})"
        record_event(self.client, invalid_policy_event(configmap, self.namespace, self.name, error, keeps,
                                                       EVENT_COMPONENT, self.clock.now()))

    def _configmap_listed(self, items: list[dict[str, Any]], why: ListReason) -> None:
        self._apply_configmap(items[0] if items else None)

    def _configmap_event(self, kind: str, obj: dict[str, Any]) -> None:
        self._apply_configmap(None if kind == "DELETED" else obj)

    # --- Namespace labels -------------------------------------------------------------------
    def _namespaces_listed(self, items: list[dict[str, Any]], why: ListReason) -> None:
        self._labels = dict(entry for entry in map(_namespace_labels, items) if entry)
        self.store.namespace_labels = dict(self._labels)

    def _namespace_event(self, kind: str, obj: dict[str, Any]) -> None:
        entry = _namespace_labels(obj)
        if entry is None:
            return
        if kind == "DELETED":
            self._labels.pop(entry[0], None)
        else:
            self._labels[entry[0]] = entry[1]
        self.store.namespace_labels = dict(self._labels)  # a new mapping, swapped whole

    def start(self) -> "ClusterPolicySource":
        for watch in self.watches:
            watch.start()
        return self

    def stop(self) -> None:
        for watch in self.watches:
            watch.stop()
