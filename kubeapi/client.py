"""The one HTTP edge to the API server, shared by the controller, the gateway's policy reloader,
the certificate keeper and the dashboard: REST calls under the official `kubernetes` client's
configuration (kubeconfig or in-cluster), sent on kept-alive connections (kubeapi/transport.py),
watches through the client's own urllib3 pool.

Every kind is handled as plain JSON dicts (parsed once by the decisions' own models), so the
API is called by path through the client's configured transport — kubeconfig or in-cluster
credentials, TLS, bearer tokens — instead of the generated typed methods, whose pydantic models
cost more than the work itself at 15,000 Workloads and do not cover our custom resources.
Every request first takes a token from the client rate limiter (`--qps`, `--burst`).
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterator, Mapping, Protocol
from urllib.parse import quote

import urllib3

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from batchgate.api.objects import metadata
from batchgate.clock import Clock, SystemClock
from batchgate.kinds.model import Resource
from kubeapi.transport import Transport, serves

MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"
# One connection per open watch (a dozen kinds) plus the workers' requests.
POOL_SIZE = 64
CREDENTIALS_SECONDS = 1.0
"""How often the credentials are looked at again (see `CredentialRefresh`)."""


class Limiter(Protocol):
    """A client rate limiter (controller/adapters/ratelimit.py's token bucket)."""

    qps: float
    burst: int

    def acquire(self) -> None: ...

    def spare(self) -> float: ...


class ApiError(Exception):
    """A non-2xx answer, with the metav1.Status reason that tells Conflict from AlreadyExists."""

    def __init__(self, status: int, reason: str, message: str, body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message, self.body = status, reason, message, body or {}

    @property
    def conflict(self) -> bool:
        return self.status == 409 and self.reason == "Conflict"

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def webhook_unreachable(self) -> bool:
        """kube-apiserver could not call an admission webhook (failurePolicy Fail): an InternalError
        whose message says `failed calling webhook`. The write was never judged; it may pass once
        the webhook answers again."""
        return self.status == 500 and self.reason == "InternalError" and "failed calling webhook" in self.message

    @classmethod
    def from_status(cls, http_status: int, text: str) -> "ApiError":
        try:
            body = json.loads(text) if text else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        return cls(int(body.get("code") or http_status), str(body.get("reason") or "Unknown"),
                   str(body.get("message") or text[:200]), body)


class CredentialRefresh:
    """The client's credential refresh, run at most once per `seconds`. The kubernetes client calls
    it before every request, and a token kubeconfig's refresh copies host, certificates and proxy
    into the configuration again (reading the proxy environment each time): about a sixth of
    the Python time of each of the controller's requests. A token that expires is still reloaded
    within `seconds`."""

    def __init__(self, configuration: Any, seconds: float, clock: Clock) -> None:
        self.seconds, self.clock = seconds, clock
        self.refresh: Callable[[Any], None] = configuration.refresh_api_key_hook
        self._due = float("-inf")
        self._lock = threading.Lock()
        configuration.refresh_api_key_hook = self

    def __call__(self, configuration: Any) -> None:  # (the client types the hook None)
        with self._lock:
            if self.clock.monotonic() < self._due:
                return
            self._due = self.clock.monotonic() + self.seconds
            self.refresh(configuration)
            # the kubeconfig loader's refresh installs itself again: take its newest, stay in front
            if configuration.refresh_api_key_hook is not self:
                self.refresh = configuration.refresh_api_key_hook
                configuration.refresh_api_key_hook = self


class KubeClient:
    def __init__(self, api_client: k8s_client.ApiClient, limiter: Limiter | None = None,
                 request_timeout: float = 30.0, transport: Transport | None = None) -> None:
        self.api_client = api_client
        self.limiter = limiter
        self.request_timeout = request_timeout
        self.transport = transport or Transport(api_client.configuration)

    @classmethod
    def from_kubeconfig(cls, path: str | None, limiter: Limiter | None = None,
                        pool_size: int = POOL_SIZE, clock: Clock | None = None) -> "KubeClient":
        """A kubeconfig file (or $KUBECONFIG / ~/.kube/config), else the in-cluster service account."""
        configuration = k8s_client.Configuration()
        try:
            k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
        except (k8s_config.ConfigException, OSError, TypeError):
            if path:
                raise
            k8s_config.load_incluster_config(client_configuration=configuration)
        configuration.connection_pool_maxsize = pool_size
        if configuration.refresh_api_key_hook is not None:
            CredentialRefresh(configuration, CREDENTIALS_SECONDS, clock or SystemClock())
        return cls(k8s_client.ApiClient(configuration), limiter)

    def with_limiter(self, limiter: Limiter | None) -> "KubeClient":
        """The same connection pool and credentials behind another rate limiter (client-go gives the
        event recorder its own client, so Events never delay the writes that carry decisions)."""
        return KubeClient(self.api_client, limiter, self.request_timeout, self.transport)

    def with_timeout(self, seconds: float) -> "KubeClient":
        """The same connection and limiter, each request given up after `seconds`."""
        return KubeClient(self.api_client, self.limiter, seconds, self.transport)

    def spare_capacity(self) -> float:
        """Requests that could be sent now without waiting (unlimited: infinity)."""
        return self.limiter.spare() if self.limiter is not None else float("inf")

    def _prepare(self, path: str, query: Mapping[str, Any] | None, body: Any,
                 content_type: str | None) -> tuple[str, dict[str, str], bytes | None]:
        """The request's target (path and query), headers and body, after a token from the rate
        limiter; its credentials are the configuration's (a bearer token refreshed as the client
        would). The client's generic serializer is skipped: every body here is already plain JSON
        data, and walking it again, with the client's parameter and response wrapping, cost about
        a quarter of each write's CPU."""
        if self.limiter is not None:
            self.limiter.acquire()
        api = self.api_client
        headers = {"Accept": JSON, **api.default_headers}
        for auth in api.configuration.auth_settings().values():
            if auth["value"]:
                headers[auth["key"]] = auth["value"]
        params = [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or {}).items() if v is not None]
        if params:
            path += "?" + "&".join(f"{k}={quote(v)}" for k, v in params)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type or JSON
            data = json.dumps(body).encode()
        return path, headers, data

    def _stream(self, method: str, path: str, query: Mapping[str, Any] | None,
                timeout: tuple[float, float]) -> urllib3.BaseHTTPResponse:
        """A response to read as it comes (a watch), through the client's own urllib3 pool."""
        target, headers, _ = self._prepare(path, query, None, None)
        try:
            return self.api_client.rest_client.pool_manager.request(
                method, self.api_client.configuration.host + target, headers=headers, preload_content=False,
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]))
        except urllib3.exceptions.SSLError as exc:  # as the client's REST layer reports it
            raise ApiError(0, f"SSLError\n{exc}", str(exc)) from None

    def _exchange(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                  content_type: str | None) -> tuple[int, bytes]:
        """One request and its whole answer: on the kept-alive transport, or (a proxy to pass
        through) the client's urllib3 pool."""
        target, headers, data = self._prepare(path, query, body, content_type)
        configuration = self.api_client.configuration
        if serves(configuration):  # a certificate not trusted is an ssl.SSLError, an OSError as any failure to connect
            return self.transport.request(method, target, data, headers, self.request_timeout)
        response = self.api_client.rest_client.pool_manager.request(
            method, configuration.host + target, body=data, headers=headers,
            timeout=urllib3.Timeout(total=self.request_timeout))
        return response.status, response.data

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str | None = None) -> dict[str, Any]:
        status, data = self._exchange(method, path, query, body, content_type)
        text = data.decode("utf-8", errors="replace")
        if not 200 <= status <= 299:
            raise ApiError.from_status(status, text)
        return json.loads(text) if text else {}

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.request("GET", res.path(namespace, name))

    def list(self, res: Resource, namespace: str | None = None, **query: Any) -> dict[str, Any]:
        return self.request("GET", res.path(namespace), query=query)

    def create(self, res: Resource, obj: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        namespace = namespace or metadata(obj).get("namespace")
        return self.request("POST", res.path(namespace), body=dict(obj))

    def replace(self, res: Resource, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        meta = metadata(obj)
        return self.request("PUT", res.path(meta.get("namespace"), meta.get("name"), subresource), body=dict(obj))

    def patch(self, res: Resource, name: str, namespace: str | None, patch: Mapping[str, Any],
              subresource: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """A merge patch; `dry_run`: the API server validates and answers it without keeping it."""
        return self.request("PATCH", res.path(namespace, name, subresource), query={"dryRun": "All" if dry_run else None},
                            body=dict(patch), content_type=MERGE_PATCH)

    def delete(self, res: Resource, name: str, namespace: str | None = None,
               preconditions: Mapping[str, str] | None = None, grace_period_seconds: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if preconditions:
            body["preconditions"] = dict(preconditions)
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        return self.request("DELETE", res.path(namespace, name), body=body)

    def watch(self, res: Resource, namespace: str | None, resource_version: str | None, timeout_seconds: int,
              field_selector: str | None = None, label_selector: str | None = None) -> "WatchStream":
        """Open a watch from `resource_version` (None: from now, the objects there are sent first as
        ADDED events); an HTTP-level error (e.g. 410) raises ApiError."""
        query = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": timeout_seconds, "fieldSelector": field_selector, "labelSelector": label_selector}
        response = self._stream("GET", res.path(namespace), query, (10, timeout_seconds + 10))
        if not 200 <= response.status <= 299:
            raise ApiError.from_status(response.status, response.read().decode("utf-8", errors="replace"))
        return WatchStream(response)

    def close(self) -> None:
        self.transport.close()
        self.api_client.close()


class WatchStream:
    """Newline-delimited watch events as dicts; `close()` from another thread ends the iteration."""

    def __init__(self, response: Any) -> None:
        self._response = response
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except Exception:
            if not self._closed:
                raise
        finally:
            if not self._closed:
                self._response.release_conn()

    def close(self) -> None:
        """Unblock a reader and drop the connection (it must not go back to the pool half-read)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._response.shutdown()
        except Exception:  # the stream already ended and its connection went back to the pool
            return
        self._response.close()


CONFIGMAPS = Resource("ConfigMap", "", "v1", "configmaps")
NAMESPACES = Resource("Namespace", "", "v1", "namespaces", namespaced=False)
SECRETS = Resource("Secret", "", "v1", "secrets")
EVENTS = Resource("Event", "", "v1", "events")
MUTATING_WEBHOOK_CONFIGURATIONS = Resource("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
                                           "mutatingwebhookconfigurations", namespaced=False)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
                                             "validatingwebhookconfigurations", namespaced=False)
"""The built-in kinds more than one process lists and watches."""
