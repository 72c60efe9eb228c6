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
import datetime as dt
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from certs.authority import service_names, write_serving_files

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
        files = write_serving_files(self.workdir / "stub-pki", service_names("authorizer", "stub"),
                                    dt.datetime.now(dt.timezone.utc))
        self.ca_file = files.ca_cert
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(files.cert, files.key)
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def start() -> None:
            app = web.Application()
            for path in ("/api/v1", "/api/v1/", "/apis/{group}/{version}", "/apis/{group}/{version}/"):
                app.router.add_get(path, self._discovery)
            app.router.add_post("/apis/authorization.k8s.io/v1/subjectaccessreviews", self._review)
            self._runner = web.AppRunner(app, shutdown_timeout=0.1)
            await self._runner.setup()
            await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context).start()
            self.port = self._runner.addresses[0][1]

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="authorizer-stub", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("authorizer stub did not start")
        self.kubeconfig = self.workdir / "stub.kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "stub",
            "clusters": [{"name": "stub", "cluster": {"server": f"https://127.0.0.1:{self.port}",
                                                      "certificate-authority": str(self.ca_file)}}],
            "users": [{"name": "gateway", "user": {"token": TOKEN}}],
            "contexts": [{"name": "stub", "context": {"cluster": "stub", "user": "gateway"}}],
        }))
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            await self._runner.cleanup()
            for task in asyncio.all_tasks():  # a slow answer still sleeping
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

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
