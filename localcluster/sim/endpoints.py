"""Service endpoints: Endpoints and EndpointSlices listing the ready (and not-ready) pods a
Service selects, and cluster IPs from the service range. Headless Services (clusterIP None) get
endpoints too, which is what makes `<pod>.<service>` names meaningful."""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable, Mapping, Sequence

from localcluster.sim.conditions import deleting, pod_ready
from localcluster.sim.matching import selector_matches

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
ADDRESS_ANNOTATION = "localcluster.batchgate.dev/address"
"""On a Service: the host:port where its backend really listens (a process run outside the cluster)."""
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"

Obj = Mapping[str, Any]


def allocate_cluster_ip(used: Iterable[str]) -> str:
    """The lowest free address of the service range after the API server's own (.1)."""
    taken = set(used)
    for host in SERVICE_CIDR.hosts():
        address = str(host)
        if address != "10.96.0.1" and address not in taken:
            return address
    raise RuntimeError(f"service range {SERVICE_CIDR} is full")


def selected_pods(service: Obj, pods: Sequence[Obj]) -> list[Obj]:
    spec = service.get("spec") or {}
    selector = spec.get("selector")
    if not selector:
        return []
    namespace = service["metadata"].get("namespace", "")
    return sorted(
        (
            p for p in pods
            if (p.get("metadata") or {}).get("namespace", "") == namespace
            and (p.get("status") or {}).get("podIP")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and selector_matches({"matchLabels": selector}, (p.get("metadata") or {}).get("labels") or {})
        ),
        key=lambda p: p["metadata"]["name"],
    )


def _ready(pod: Obj) -> bool:
    """Ready and not terminating: a pod being deleted leaves the ready addresses at once."""
    return pod_ready(pod) and not deleting(pod)


def _target_port(port: Obj, pod: Obj) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target:
                return int(cport["containerPort"])
    return None


def _ports(service: Obj, pods: Sequence[Obj]) -> list[dict[str, Any]]:
    out = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = next((n for n in (_target_port(port, p) for p in pods) if n is not None), None)
        if number is None:
            target = port.get("targetPort", port.get("port"))
            number = target if isinstance(target, int) else port.get("port")
        entry = {"port": int(number), "protocol": port.get("protocol", "TCP")}
        if port.get("name"):
            entry["name"] = port["name"]
        out.append(entry)
    return out


def _ref(pod: Obj) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"], "uid": meta.get("uid", "")}


def endpoints_for(service: Obj, pods: Sequence[Obj]) -> dict[str, Any]:
    meta = service["metadata"]
    chosen = selected_pods(service, pods)
    publish_all = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    ready = [p for p in chosen if publish_all or _ready(p)]
    waiting = [p for p in chosen if p not in ready]

    def address(pod: Obj) -> dict[str, Any]:
        out = {"ip": pod["status"]["podIP"], "targetRef": _ref(pod)}
        if (pod.get("spec") or {}).get("nodeName"):
            out["nodeName"] = pod["spec"]["nodeName"]
        if (pod.get("spec") or {}).get("hostname"):
            out["hostname"] = pod["spec"]["hostname"]
        return out

    subsets = []
    if chosen:
        subset: dict[str, Any] = {"ports": _ports(service, chosen)}
        if ready:
            subset["addresses"] = [address(p) for p in ready]
        if waiting:
            subset["notReadyAddresses"] = [address(p) for p in waiting]
        subsets.append(subset)
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""), "labels": dict(meta.get("labels") or {})},
        "subsets": subsets,
    }


def endpoint_slice_for(service: Obj, pods: Sequence[Obj]) -> dict[str, Any]:
    meta = service["metadata"]
    chosen = selected_pods(service, pods)
    publish_all = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoints = []
    for pod in chosen:
        ready = publish_all or _ready(pod)
        entry: dict[str, Any] = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {"ready": ready, "serving": publish_all or pod_ready(pod), "terminating": deleting(pod)},
            "targetRef": _ref(pod),
        }
        if (pod.get("spec") or {}).get("nodeName"):
            entry["nodeName"] = pod["spec"]["nodeName"]
        if (pod.get("spec") or {}).get("hostname"):
            entry["hostname"] = pod["spec"]["hostname"]
        endpoints.append(entry)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-local",
            "namespace": meta.get("namespace", ""),
            "labels": {SERVICE_NAME_LABEL: meta["name"], MANAGED_BY_LABEL: MANAGED_BY},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta.get("uid", ""),
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": _ports(service, chosen) if chosen else [],
    }


LOOPBACK_POD_RANGE = ipaddress.ip_network("127.1.0.0/16")  # process pods' IPs: loopback, never routable


def allocate_loopback(used: Iterable[str], start: int = 0) -> str:
    """The first free loopback address for a process pod from host number `start` on (wrapping),
    which its process may bind. Each cluster starts at its own block, so that two clusters on one
    machine (concurrent test runs) do not hand out the same address."""
    taken = set(used)
    first = int(LOOPBACK_POD_RANGE.network_address) + 1  # hosts(): neither the network nor the broadcast address
    count = LOOPBACK_POD_RANGE.num_addresses - 2
    for offset in range(count):
        host = str(ipaddress.IPv4Address(first + (start + offset) % count))
        if host not in taken:
            return host
    raise RuntimeError(f"loopback pod range {LOOPBACK_POD_RANGE} is full")


class NoEndpoints(LookupError):
    """kube-apiserver's ServiceUnavailable when a Service has no ready address for the port;
    `cluster_ip` is the Service's, which a caller that dials it (a webhook call) finds refused."""

    def __init__(self, message: str, cluster_ip: str = "") -> None:
        super().__init__(message)
        self.cluster_ip = cluster_ip


def service_backends(service: Obj, endpoints: Obj | None, port: int, turn: int) -> list[tuple[str, int]]:
    """Ready addresses behind a Service port, as kube-apiserver's endpoint resolver finds them:
    the Service port named by number, its target by the port name in Endpoints; the list starts
    at `turn` (calls spread over the endpoints) and goes on to the others (failover)."""
    name = service["metadata"]["name"]
    svc_port = next((p for p in (service.get("spec") or {}).get("ports") or [] if p.get("port") == port), None)
    if svc_port is None:
        raise NoEndpoints(f'no service port {port} found for service "{name}"')
    found: list[tuple[str, int]] = []
    for subset in (endpoints or {}).get("subsets") or []:
        number = next((p.get("port") for p in subset.get("ports") or [] if p.get("name", "") == svc_port.get("name", "")),
                      None)
        if number is None:
            continue
        found += [(a["ip"], int(number)) for a in subset.get("addresses") or [] if a.get("ip")]
    if not found:
        raise NoEndpoints(f'no endpoints available for service "{name}"', (service.get("spec") or {}).get("clusterIP", ""))
    start = turn % len(found)
    return found[start:] + found[:start]
