"""What the webhook dispatcher reads from the cluster: configurations, namespace labels, and
where a webhook Service really listens: the `webhook_addresses` flag or a Service annotation
(a webhook run outside the cluster), else the Service's ready endpoints (pods the process
kubelets run), spread call by call.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from localcluster.apiserver.admission import WebhookDispatcher
from localcluster.sim.endpoints import ADDRESS_ANNOTATION, service_backends
from localcluster.store import Store

_CONFIG_RESOURCES = {
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
}


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise LookupError(f"bad service address {address!r}: expected host:port")
    return host.strip("[]"), int(port)


def dispatcher(store: Store, addresses: Mapping[str, str]) -> WebhookDispatcher:
    """A dispatcher over the store. `addresses` maps `name.namespace` (or `namespace/name`) to host:port."""

    def configurations(kind: str) -> list[dict[str, Any]]:
        return [entry.obj for entry in store.list(_CONFIG_RESOURCES[kind])]

    def namespace_labels(namespace: str) -> dict[str, str]:
        entry = store.get(("", "namespaces"), "", namespace)
        return dict((entry.obj["metadata"].get("labels") or {}) if entry else {})

    turns = itertools.count()

    def resolve(namespace: str, name: str, port: int) -> list[tuple[str, int]]:
        address = addresses.get(f"{name}.{namespace}") or addresses.get(f"{namespace}/{name}")
        service = store.get(("", "services"), namespace, name)
        if not address and service is not None:
            address = (service.obj["metadata"].get("annotations") or {}).get(ADDRESS_ANNOTATION)
        if address:
            return [_split_address(address)]
        if service is None:
            raise LookupError(f"{name}.{namespace}.svc")
        endpoints = store.get(("", "endpoints"), namespace, name)
        return service_backends(service.obj, endpoints.obj if endpoints else None, port, next(turns))

    return WebhookDispatcher(configurations, namespace_labels, resolve)
