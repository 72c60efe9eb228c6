"""kube-proxy's job for a control plane whose Service range is on loopback: every Service cluster
IP that is a loopback address gets a TCP listener on that address and each Service port while the
Service has a ready backend, and each connection is passed to a ready pod the Service selects (or
to the address a Service annotation names, for a process run outside the cluster). With no ready
backend nothing listens, so a connection is refused, as kube-proxy's reject rule does.

This is how a real kube-apiserver reaches the gateway here: it dials a webhook Service's cluster
IP (its default service resolver), exactly as on any cluster. Pods of this cluster have loopback
addresses, which EndpointSlices refuse, so the backends come from the pods themselves through the
same selection the stand-in's endpoints controller makes (`sim.endpoints`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import ipaddress
import itertools
import logging
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller
from localcluster.runtime.client import PODS, SERVICES, Api
from localcluster.runtime.endpoints_controller import selecting_services
from localcluster.runtime.informers import SharedInformers
from localcluster.sim.endpoints import ADDRESS_ANNOTATION, NoEndpoints, endpoints_for, service_backends

log = logging.getLogger(__name__)
CONNECT_SECONDS = 5.0
CHUNK = 64 * 1024

Listener = tuple[str, int]  # (cluster IP, service port)


def wanted_listeners(service: dict[str, Any]) -> set[Listener]:
    """The (cluster IP, port) pairs a Service needs served here: TCP ports on loopback cluster IPs."""
    spec = service.get("spec") or {}
    addresses = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    out: set[Listener] = set()
    for address in addresses:
        try:
            if not ipaddress.ip_address(address).is_loopback:
                continue
        except ValueError:  # "None" (headless) or empty
            continue
        out |= {(address, int(p["port"])) for p in spec.get("ports") or [] if p.get("protocol", "TCP") == "TCP"}
    return out


def served(service: dict[str, Any], pods: list[dict[str, Any]]) -> set[Listener]:
    """The listeners of a Service that have a backend now."""
    out = set()
    for listener in wanted_listeners(service):
        try:
            backends(service, pods, listener[1], 0)
        except NoEndpoints:
            continue
        out.add(listener)
    return out


def backends(service: dict[str, Any], pods: list[dict[str, Any]], port: int, turn: int) -> list[tuple[str, int]]:
    """Where a connection to the Service port goes: the annotated address, else its ready pods
    (starting at `turn`, the others after it for failover). NoEndpoints if there is none."""
    address = (service["metadata"].get("annotations") or {}).get(ADDRESS_ANNOTATION)
    if address:
        host, _, number = address.rpartition(":")
        return [(host.strip("[]"), int(number))]
    namespace = service["metadata"].get("namespace", "")
    mine = [p for p in pods if p["metadata"].get("namespace") == namespace]
    return service_backends(service, endpoints_for(service, mine), port, turn)


class ServiceProxy(Controller):
    component = "kube-proxy"
    workers = 1

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.services = self.informer(SERVICES, self.enqueue)
        self.pods = self.informer(PODS, self._on_pod)
        self.servers: dict[Listener, asyncio.Server] = {}
        self.owners: dict[Listener, str] = {}  # listener -> the Service key it serves
        self.turns = itertools.count()

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            for server in self.servers.values():
                server.close()
            self.servers.clear()

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        for key in selecting_services(self.services.values(), pod):
            self.queue.add(key)

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        service = self.services.get(namespace, name)
        wanted = served(service, self.pods.values()) if service is not None else set()
        for listener in [l for l, owner in self.owners.items() if owner == key and l not in wanted]:
            self.servers.pop(listener).close()
            del self.owners[listener]
        for listener in wanted - set(self.servers):
            host, port = listener
            try:
                self.servers[listener] = await asyncio.start_server(functools.partial(self._relay, key, port),
                                                                    host, port)
            except OSError as err:  # taken by another cluster on this machine, or no right to bind
                log.error("kube-proxy: cannot listen on %s:%d for service %s: %s", host, port, key, err)
                return dt.timedelta(seconds=5)
            self.owners[listener] = key
        return None

    async def _relay(self, key: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        namespace, name = key.split("/", 1)
        service = self.services.get(namespace, name)
        try:
            if service is None:
                raise NoEndpoints(f'service "{name}" is gone')
            targets = backends(service, self.pods.values(), port, next(self.turns))
            upstream = await self._connect(targets)
        except (NoEndpoints, OSError) as err:  # the client sees the connection refused, as with kube-proxy
            log.info("kube-proxy: %s port %d: %s", key, port, err)
            writer.close()
            return
        up_reader, up_writer = upstream
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def _connect(self, targets: list[tuple[str, int]]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        last: OSError | None = None
        for host, port in targets:
            try:
                return await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_SECONDS)
            except (OSError, asyncio.TimeoutError) as err:
                last = err if isinstance(err, OSError) else OSError(f"connect to {host}:{port} timed out")
        raise last or OSError("no backend")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
