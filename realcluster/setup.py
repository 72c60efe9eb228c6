"""The few REST calls the real cluster makes to set itself up, as its test bed's administrator:
server-side apply of its own objects, reads, and service-account tokens for the operators'
stand-ins (the TokenRequest API, as their pods would mount them)."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any

from localcluster.rbac import bootstrap

FIELD_MANAGER = "localcluster-testbed"
CALL_SECONDS = 30.0
ESTABLISHED_SECONDS = 30.0

# kind -> (API path prefix, plural, namespaced): only the kinds the test bed applies
_KINDS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
}


class SetupError(RuntimeError):
    """A set-up call the API server refused; the message is its method, path, code and reason."""


def _call(url: str, ca_file: str, token: str, method: str, path: str, body: bytes | None = None,
          content_type: str = "application/json") -> dict[str, Any]:
    request = urllib.request.Request(url + path, data=body, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if body is not None:
        request.add_header("Content-Type", content_type)
    context = ssl.create_default_context(cafile=ca_file)
    try:
        with urllib.request.urlopen(request, timeout=CALL_SECONDS, context=context) as reply:
            return dict(json.loads(reply.read() or b"{}"))
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("message", detail)
        except json.JSONDecodeError:
            pass
        raise SetupError(f"{method} {path}: {err.code} {detail}") from None


def get_json(url: str, ca_file: str, token: str, path: str, missing_ok: bool = False) -> dict[str, Any]:
    try:
        return _call(url, ca_file, token, "GET", path)
    except SetupError as err:
        if missing_ok and ": 404 " in str(err):
            return {}
        raise


def object_path(obj: Mapping[str, Any]) -> str:
    prefix, plural, namespaced = _KINDS[obj["kind"]]
    meta = obj["metadata"]
    namespace = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"{prefix}{namespace}/{plural}/{meta['name']}"


def apply_objects(url: str, ca_file: str, token: str, objects: list[dict[str, Any]]) -> None:
    """Server-side apply each object in order; wait until every CRD among them is Established."""
    for obj in objects:
        _call(url, ca_file, token, "PATCH", f"{object_path(obj)}?fieldManager={FIELD_MANAGER}&force=true",
              json.dumps(obj).encode(), "application/apply-patch+yaml")
    wait_established(url, ca_file, token, [o for o in objects if o["kind"] == "CustomResourceDefinition"])


def wait_established(url: str, ca_file: str, token: str, crds: Iterable[Mapping[str, Any]]) -> None:
    """Until every CRD is Established. `kubectl wait --for=condition=Established` is no substitute:
    it fails at once (`.status.conditions accessor error: <nil>`) on a CRD read before the API
    server first wrote its conditions."""
    for crd in crds:
        deadline = time.monotonic() + ESTABLISHED_SECONDS
        while True:
            conditions = (get_json(url, ca_file, token, object_path(crd)).get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise SetupError(f"CRD {crd['metadata']['name']} was not Established after {ESTABLISHED_SECONDS:.0f} s")
            time.sleep(0.1)


def operator_objects(components: Iterable[str] = tuple(bootstrap.OPERATOR_ACCOUNTS)) -> list[dict[str, Any]]:
    """The stand-in operators' (all, or those of `components`) namespaces, service accounts, roles
    and bindings, from the same table the stand-in bootstraps them from (localcluster/rbac/bootstrap.py)."""
    accounts = sorted({bootstrap.OPERATOR_ACCOUNTS[c] for c in components})
    out: list[dict[str, Any]] = []
    for namespace in sorted({ns for ns, _ in accounts}):
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for namespace, account in accounts:
        out.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}})
        out.append(bootstrap.cluster_role(account, bootstrap.OPERATOR_RULES[account]))
        out.append(bootstrap.cluster_role_binding(account, account, [bootstrap.service_account(namespace, account)]))
    return out


def request_token(url: str, ca_file: str, token: str, namespace: str, account: str, seconds: int) -> str:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    reply = _call(url, ca_file, token, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                  json.dumps(body).encode())
    return str(reply["status"]["token"])
