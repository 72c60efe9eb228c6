"""Endpoints and EndpointSlices for every Service with a selector, kept in step with its pods;
Services created without a cluster IP get one from the service range."""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Mapping

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, object_key
from localcluster.runtime.client import ENDPOINTS, ENDPOINTSLICES, PODS, SERVICES, Api, ApiError, ignore_gone
from localcluster.runtime.informers import SharedInformers
from localcluster.sim.endpoints import allocate_cluster_ip, endpoint_slice_for, endpoints_for


def selecting_services(services: Iterable[Mapping[str, Any]], pod: Mapping[str, Any]) -> list[str]:
    """The keys of the Services a change to `pod` may concern: those with a selector in its namespace."""
    namespace = pod["metadata"].get("namespace", "")
    return [object_key(svc) for svc in services
            if svc["metadata"].get("namespace") == namespace and (svc.get("spec") or {}).get("selector")]


class EndpointsController(Controller):
    component = "endpoint-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.services = self.informer(SERVICES, self.enqueue)
        self.pods = self.informer(PODS, self._on_pod)
        self.endpoints = self.informer(ENDPOINTS, lambda kind, ep: None)
        self.slices = self.informer(ENDPOINTSLICES, lambda kind, s: None)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        for key in selecting_services(self.services.values(), pod):
            self.queue.add(key)

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        service = self.services.get(namespace, name)
        if service is None:
            return None
        spec = service.get("spec") or {}
        if not spec.get("clusterIP") and spec.get("type", "ClusterIP") != "ExternalName":
            used = [(s.get("spec") or {}).get("clusterIP", "") for s in self.services.values()]
            ip = allocate_cluster_ip(used)
            self.services.remember(await ignore_gone(self.api.patch(SERVICES.path(namespace, name),
                                                                    {"spec": {"clusterIP": ip, "clusterIPs": [ip]}})))
        if not spec.get("selector"):
            return None
        pods = [p for p in self.pods.values() if p["metadata"].get("namespace") == namespace]
        await self._put(ENDPOINTS, self.endpoints, endpoints_for(service, pods), ("subsets",))
        await self._put(ENDPOINTSLICES, self.slices, endpoint_slice_for(service, pods), ("endpoints", "ports"))
        return None

    async def _put(self, resource: Any, cache: Any, wanted: dict[str, Any], fields: tuple[str, ...]) -> None:
        meta = wanted["metadata"]
        current = cache.get(meta["namespace"], meta["name"])
        if current is not None and all(current.get(f) == wanted.get(f) for f in fields):
            return
        try:
            if current is None:
                cache.remember(await self.api.create(resource.path(meta["namespace"]), wanted))
            else:
                cache.remember(await self.api.patch(resource.path(meta["namespace"], meta["name"]),
                                                    {f: wanted[f] for f in fields}))
        except ApiError as err:
            if err.reason not in ("AlreadyExists", "NotFound", "Conflict"):
                raise
