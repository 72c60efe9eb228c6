"""The policy from a ConfigMap, and Namespace labels, kept current by list + watch.

The only webhook module that talks to the API server, and never on the request path: each
gunicorn worker runs these watches in daemon threads (started after fork) and the request
threads read what they left in the `PolicyStore`.

Each watch lists once, then watches from the list's resourceVersion; when a watch ends it resumes
from the last version it saw, and when the server answers 410 Gone (the version fell out of its
history) it lists again. Errors back off exponentially. A ConfigMap with an invalid policy
keeps the last good policy in force; an absent ConfigMap means the built-in defaults.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Mapping, cast

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from batchgate.api.objects import metadata
from batchgate.clock import Clock, SystemClock
from batchgate.events import Involved, event_body
from batchgate.policy import POLICY_KEY, PolicyError, configmap_fix, parse_policy
from webhook.policy.store import DEFAULTS, LoadedPolicy, PolicyStore

log = logging.getLogger("batchgate.webhook.policy")

WATCH_SECONDS = 240
"""Server-side timeout of one watch request; the watch then resumes from its last version."""
REQUEST_TIMEOUT = (10, WATCH_SECONDS + 30)
"""(connect, read) seconds: a watch whose server vanished without closing is noticed and redone."""
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
"""Seconds to wait after a failed list or watch, doubling up to the maximum."""
GONE = 410
CONFLICT = 409
EVENT_COMPONENT = "batchgate-webhook"
EVENT_ERROR_CHARS = 800
"""An Event message is at most 1 KiB; the error is cut to leave room for what is in force."""


def api_client(kubeconfig: str | None) -> client.ApiClient:
    """From a kubeconfig file, else in-cluster, else ~/.kube/config."""
    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)
    try:
        config.load_incluster_config()
        return client.ApiClient()
    except config.ConfigException:
        return config.new_client_from_config()


def policy_from_configmap(configmap: dict[str, Any] | None, source: str) -> LoadedPolicy:
    """The policy a ConfigMap holds (defaults when it is absent); PolicyError when invalid."""
    if configmap is None:
        return DEFAULTS
    data = configmap.get("data") or {}
    text = data.get(POLICY_KEY)
    if text is None:
        raise PolicyError(source, None, "data", f"ConfigMap has no {POLICY_KEY!r} key")
    return LoadedPolicy.of(parse_policy(text, source), source)


class ListWatch:
    """List then watch one collection until stopped; `on_list(items)`, `on_event(type, obj)`."""

    def __init__(self, name: str, list_fn: Callable[..., Any], stop: threading.Event,
                 on_list: Callable[[list[dict[str, Any]]], None],
                 on_event: Callable[[str, dict[str, Any]], None], *,
                 watch_seconds: int = WATCH_SECONDS, request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
                 **selectors: Any):
        self.name, self.list_fn, self.stop = name, list_fn, stop
        self.on_list, self.on_event, self.selectors = on_list, on_event, selectors
        self.watch_seconds, self.request_timeout = watch_seconds, request_timeout
        self.lists = 0
        self.expired = 0

    def _list(self) -> str:
        listing = self.list_fn(**self.selectors, _preload_content=False, _request_timeout=self.request_timeout)
        body = json.loads(listing.data)
        self.on_list(body.get("items") or [])
        self.lists += 1
        return body.get("metadata", {}).get("resourceVersion", "")

    def run(self) -> None:
        backoff = BACKOFF_FIRST
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    version = self._list()
                    backoff = BACKOFF_FIRST
                watcher = watch.Watch()
                for event in watcher.stream(self.list_fn, resource_version=version,
                                            timeout_seconds=self.watch_seconds, allow_watch_bookmarks=True,
                                            _request_timeout=self.request_timeout, **self.selectors):
                    if self.stop.is_set():
                        watcher.stop()
                        break
                    obj = event.get("raw_object") or {}
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.on_event(event["type"], obj)
                backoff = BACKOFF_FIRST
            except ApiException as exc:
                if exc.status == GONE:
                    log.info("%s watch expired (410), listing again", self.name)
                    self.expired += 1
                    version = ""
                    continue
                log.warning("%s list/watch failed (%s %s), retrying in %.1fs", self.name, exc.status, exc.reason, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
            except Exception as exc:  # noqa: BLE001 - connection errors of every kind: retry
                log.warning("%s list/watch failed (%s), retrying in %.1fs", self.name, exc, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)


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
        self.source = f"configmap {self.namespace}/{self.name}"
        self.core = client.CoreV1Api(api or api_client(kubeconfig))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._labels: dict[str, dict[str, str]] = {}

    # --- the policy ConfigMap ---------------------------------------------------------------
    def _apply_configmap(self, configmap: dict[str, Any] | None) -> None:
        """Install what the ConfigMap holds; whatever it holds, the watch goes on."""
        try:
            loaded = policy_from_configmap(configmap, self.source)
        except PolicyError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a policy we cannot even read must not stop the watch
            log.exception("reading the policy from %s failed", self.source)
            error = f"{self.source}: the policy cannot be read ({type(exc).__name__})"
        else:
            self.store.install(loaded)
            return
        error = f"{error}; {configmap_fix(self.namespace, self.name)}"
        in_force = self.store.reject(self.source, error)
        self._report_invalid(configmap or {}, error, in_force)

    def _report_invalid(self, configmap: dict[str, Any], error: str, in_force: LoadedPolicy) -> None:
        """A Warning Event on the ConfigMap, so `kubectl describe` shows why the edit did not
        take. Named after the ConfigMap's version and the error, so the gateway's workers and
        replicas, which all see the same edit, make one Event between them."""
        meta = metadata(configmap)
        version = str(meta.get("resourceVersion", ""))
        message = (f"{error[:EVENT_ERROR_CHARS]}; the gateway keeps serving {in_force.source} "
                   f"(policy {in_force.version})")
        involved = Involved("v1", "ConfigMap", self.name, self.namespace, meta.get("uid"), version)
        event = event_body(self.namespace, involved, "Warning", "InvalidPolicy", message, f"{version}\n{error}",
                           self.clock.now(), EVENT_COMPONENT)
        try:
            # The client serializes a plain dict as it would its CoreV1Event model.
            self.core.create_namespaced_event(self.namespace, cast(Any, event), _request_timeout=REQUEST_TIMEOUT[0])
        except ApiException as exc:
            if exc.status != CONFLICT:  # another worker reported this edit already
                log.warning("cannot record an Event on %s: %s %s", self.source, exc.status, exc.reason)
        except Exception as exc:  # noqa: BLE001 - reporting is best effort; the store has the error
            log.warning("cannot record an Event on %s: %s", self.source, exc)

    def _configmap_listed(self, items: list[dict[str, Any]]) -> None:
        self._apply_configmap(items[0] if items else None)

    def _configmap_event(self, kind: str, obj: dict[str, Any]) -> None:
        self._apply_configmap(None if kind == "DELETED" else obj)

    # --- Namespace labels -------------------------------------------------------------------
    def _namespaces_listed(self, items: list[dict[str, Any]]) -> None:
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
        watches = (
            ListWatch("policy configmap", self.core.list_namespaced_config_map, self._stop, self._configmap_listed,
                      self._configmap_event, namespace=self.namespace, field_selector=f"metadata.name={self.name}"),
            ListWatch("namespaces", self.core.list_namespace, self._stop, self._namespaces_listed,
                      self._namespace_event),
        )
        for lw in watches:
            thread = threading.Thread(target=lw.run, name=f"watch-{lw.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
