"""A small async Kubernetes REST client (aiohttp, keep-alive, bearer token over TLS).

The simulated controllers use it instead of the `kubernetes` package because they run as tasks
on the cluster's own event loop; it speaks the same REST and reads `metav1.Status` errors.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any, AsyncIterator, Mapping

import aiohttp

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the REST tree."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


PODS = Resource("", "v1", "pods")
NODES = Resource("", "v1", "nodes", namespaced=False)
SERVICES = Resource("", "v1", "services")
ENDPOINTS = Resource("", "v1", "endpoints")
EVENTS = Resource("", "v1", "events")
CONFIGMAPS = Resource("", "v1", "configmaps")
SECRETS = Resource("", "v1", "secrets")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases")
JOBS = Resource("batch", "v1", "jobs")
DEPLOYMENTS = Resource("apps", "v1", "deployments")
REPLICASETS = Resource("apps", "v1", "replicasets")
STATEFULSETS = Resource("apps", "v1", "statefulsets")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices")
PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs")
RAYCLUSTERS = Resource("ray.io", "v1", "rayclusters")
RAYJOBS = Resource("ray.io", "v1", "rayjobs")


class ApiError(Exception):
    """A non-2xx answer; `reason` is the metav1.Status reason (NotFound, Conflict, ...)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class Api:
    def __init__(self, base_url: str, *, token: str, ca_file: str | None = None, limit: int = 8) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._ssl: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else False
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl, limit=self._limit * 4)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                      params: Mapping[str, str] | None = None) -> Any:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if body is not None else {}
        async with self.session().request(method, self.base_url + path, data=data, headers=headers,
                                          params=params or None) as response:
            text = await response.text()
            if response.status >= 300:
                raise _error(response.status, text)
            return json.loads(text) if text else None

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        return await self.request("GET", path, params=params)

    async def create(self, path: str, body: Any) -> Any:
        return await self.request("POST", path, body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> Any:
        return await self.request("PATCH", path, body, content_type=content_type)

    async def delete(self, path: str, body: Any = None) -> Any:
        return await self.request("DELETE", path, body)

    async def watch(self, path: str, resource_version: str, *, extra: Mapping[str, str] | None = None,
                    timeout_seconds: int = 300) -> AsyncIterator[dict[str, Any]]:
        """Yield watch events (dicts with type and object) until the server ends the stream."""
        params = {**(extra or {}), "watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout_seconds)}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
        async with self.session().get(self.base_url + path, params=params, timeout=timeout) as response:
            if response.status >= 300:
                raise _error(response.status, await response.text())
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)


def _error(status: int, text: str) -> ApiError:
    try:
        body = json.loads(text)
        return ApiError(status, body.get("reason") or "Unknown", body.get("message") or text)
    except (ValueError, AttributeError):
        return ApiError(status, "Unknown", text[:200])


async def ignore_gone(coro: Any) -> Any:
    """Await a write whose target may already be gone: NotFound or Gone answer None.

    Anything else — a conflict, a timeout, a refused connection, a webhook's failure — is raised,
    so the sync that made the write fails and is tried again (`Controller._work`) instead of going
    on as if the write had happened.
    """
    try:
        return await coro
    except ApiError as err:
        if err.status in (404, 410):
            return None
        raise
