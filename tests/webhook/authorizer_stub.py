"""A real HTTPS server that answers discovery and SubjectAccessReviews from a table, as a
kube-apiserver with an authorizer would, for testing the gateway's authorization adapter.

    with AuthorizerStub(tmp, grants={("alice", "", "configmaps", "team-a")}) as stub:
        stub.kubeconfig  # a kubeconfig (bearer token, the stub's CA) for the kubernetes client

`grants` holds (user or group, API group, resource, namespace) tuples that may `create`; anything
else is denied with a kube-apiserver-like reason. `mode` makes it misbehave: "missing" (404 on
SubjectAccessReview, as a cluster without the API), "error" (500), "slow" (answers after `delay`
seconds). Every SubjectAccessReview received is kept in `reviews`; every request path in `paths`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.tls_stub import TlsStub

TOKEN = "gateway-token"
SERVED: dict[str, list[tuple[str, str]]] = {
    "v1": [("secrets", "Secret"), ("configmaps", "ConfigMap"), ("pods", "Pod"), ("pods/log", "Pod"),
           ("services", "Service"), ("persistentvolumeclaims", "PersistentVolumeClaim")],
    "batch/v1": [("jobs", "Job"), ("jobs/status", "Job")],
    "apps/v1": [("deployments", "Deployment"), ("statefulsets", "StatefulSet")],
    "kubeflow.org/v1": [("pytorchjobs", "PyTorchJob")],
}


@dataclass
class AuthorizerStub:
    workdir: Path
    grants: set[tuple[str, str, str, str]] = field(default_factory=set)
    mode: str = "ok"
    delay: float = 0.0
    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    port: int = 0

    def __enter__(self) -> "AuthorizerStub":
        def app() -> web.Application:
            made = web.Application()
            for path in ("/api/v1", "/api/v1/", "/apis/{group}/{version}", "/apis/{group}/{version}/"):
                made.router.add_get(path, self._discovery)
            made.router.add_post("/apis/authorization.k8s.io/v1/subjectaccessreviews", self._review)
            return made

        self._server = TlsStub(app, self.workdir / "stub-pki", "authorizer", "stub", "authorizer-stub")
        self.ca_file = self._server.files.ca_cert
        self.port = self._server.port
        self.kubeconfig = self._server.write_kubeconfig(self.workdir / "stub.kubeconfig", TOKEN)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {TOKEN}"

    async def _discovery(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        if not self._authorized(request):
            return _status(401, "Unauthorized", "Unauthorized")
        group_version = "v1" if request.path.startswith("/api/") else f"{request.match_info['group']}/{request.match_info['version']}"
        if group_version not in SERVED:
            return _status(404, "NotFound", "the server could not find the requested resource")
        resources = [{"name": name, "singularName": "", "namespaced": True, "kind": kind, "verbs": ["create"]}
                     for name, kind in SERVED[group_version]]
        return web.json_response({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                                  "resources": resources})

    async def _review(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        if not self._authorized(request):
            return _status(401, "Unauthorized", "Unauthorized")
        if self.mode == "missing":
            return _status(404, "NotFound", "the server could not find the requested resource")
        if self.mode == "error":
            return _status(500, "InternalError", "etcdserver: request timed out")
        if self.mode == "slow":
            await asyncio.sleep(self.delay)
        body = await request.json()
        self.reviews.append(body)
        spec = body["spec"]
        attributes = spec["resourceAttributes"]
        who = [spec.get("user", ""), *spec.get("groups", [])]
        allowed = attributes["verb"] == "create" and any(
            (subject, attributes["group"], attributes["resource"], attributes["namespace"]) in self.grants
            for subject in who)
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = f'RBAC: allowed by RoleBinding "grant/{attributes["namespace"]}" of Role "grant" to User "{spec.get("user")}"'
        return web.json_response({**body, "status": status}, status=201)


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                              "reason": reason, "code": code}, status=code)
