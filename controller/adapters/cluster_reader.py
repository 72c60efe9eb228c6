"""Read what `batchgate check` needs from a cluster: one list per kind, through the kubernetes client.

Every failure to reach or read the cluster becomes one `ClusterReadError` with a sentence a
person can act on (no kubeconfig, unknown context, refused connection, forbidden, CRDs missing).
"""

from __future__ import annotations

from typing import Any

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource

NODE = Resource("Node", "", "v1", "nodes", namespaced=False)
# Read in this order so the inventory sees flavors and queues before the workloads that use them.
CHECK_RESOURCES: tuple[Resource, ...] = (
    NODE, RESOURCES["Namespace"], RESOURCES["ResourceFlavor"], RESOURCES["WorkloadPriorityClass"],
    RESOURCES["ClusterQueue"], RESOURCES["LocalQueue"], RESOURCES["Workload"],
)
REQUEST_TIMEOUT = 15.0  # seconds per list; a checker should fail fast, not hang


class ClusterReadError(Exception):
    """The cluster could not be read; the message says why in one line."""


def connect(kubeconfig: str | None, context: str | None) -> KubeClient:
    """A client from a kubeconfig (or $KUBECONFIG / ~/.kube/config), else the in-cluster account."""
    configuration = k8s_client.Configuration()
    try:
        k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    except (k8s_config.ConfigException, OSError, TypeError, ValueError) as exc:
        if kubeconfig or context:
            raise ClusterReadError(f"cannot load kubeconfig: {_first_line(exc)}") from None
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except k8s_config.ConfigException:
            raise ClusterReadError(f"no kubeconfig and not running in a cluster: {_first_line(exc)}") from None
    configuration.retries = 1
    return KubeClient(k8s_client.ApiClient(configuration), request_timeout=REQUEST_TIMEOUT)


def read_objects(kube: KubeClient) -> list[dict[str, Any]]:
    """Every object of the kinds a check reads, each with its kind and apiVersion set."""
    return [obj for res in CHECK_RESOURCES for obj in list_objects(kube, res)]


def list_objects(kube: KubeClient, res: Resource, namespace: str | None = None,
                 label_selector: str | None = None) -> list[dict[str, Any]]:
    """One kind's objects (in `namespace`, None: all), each with its kind and apiVersion set; any
    failure is a ClusterReadError saying why in one line."""
    try:
        listing = kube.list(res, namespace, labelSelector=label_selector)
    except ApiError as exc:
        raise ClusterReadError(api_error_line(exc, res)) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ClusterReadError(f"cannot reach the cluster at {kube.api_client.configuration.host}: "
                               f"{_transport_reason(exc)}") from None
    return [{"kind": res.kind, "apiVersion": res.api_version, **item}
            for item in listing.get("items") or [] if isinstance(item, dict)]


def api_error_line(exc: ApiError, res: Resource) -> str:
    """An API error on `res` as one line; a kind the cluster does not serve names the install."""
    if exc.not_found and res.group:
        return (f"the cluster does not serve {res.plural}.{res.group}/{res.version}: batchgate is not installed "
                f"there (docs/install.md; its CRDs alone: kubectl apply -k manifests/crds)")
    return f"cannot list {res.plural}: {exc.status} {exc.reason}: {_first_line(exc.message)}"


def kubeconfig_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace kubectl would use: the context's, else `default` (also in a pod, as kubectl)."""
    try:
        contexts, current = k8s_config.list_kube_config_contexts(config_file=kubeconfig)
    except (k8s_config.ConfigException, OSError, TypeError, ValueError):
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def _transport_reason(exc: Exception) -> str:
    """Why the request failed, in one line: urllib3 (a proxied cluster) wraps the cause (refused,
    timed out, bad certificate) in a long retry message."""
    cause = (exc.reason or exc) if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    text = _first_line(cause)
    marker = text.find("Failed to establish a new connection")
    return text[marker:] if marker >= 0 else text


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
