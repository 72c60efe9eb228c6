"""A real TLS admission webhook for dispatcher tests, whose behaviour is chosen by the URL path.

Paths: /allow, /warn, /deny, /deny-conflict (a 409 denial), /deny-with-code-200, /deny-bare, /label/<key>/<value>, /count,
/stamp (sets spec.stamp to the operation and an undeclared spec.smuggled), /bad-patch, /undecodable-patch, /slow/<seconds>, /crash, /html, /wrong-uid, /wrong-version.
Every review it receives is kept with its path, query and headers.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from certs.authority import ServingFiles
from localcluster.apiserver.webhook_sources import ADDRESS_ANNOTATION
from tests.tls_stub import TlsStub


@dataclass
class Received:
    peer: tuple[str, int]  # the client's address: one per connection
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    review: dict[str, Any]


@dataclass
class WebhookStub:
    workdir: Path
    service: str = "stub"
    namespace: str = "hooks"
    received: list[Received] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    most_in_flight: dict[str, int] = field(default_factory=dict)
    port: int = 0

    def __enter__(self) -> "WebhookStub":
        def app() -> web.Application:
            made = web.Application()
            made.router.add_post("/{tail:.*}", self._handle)
            return made

        self._server = TlsStub(app, self.workdir / "pki", self.service, self.namespace, "webhook stub")
        self.files: ServingFiles = self._server.files
        self.port = self._server.port
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def routing(self) -> str:
        """For `kubectl apply`: the stub's Namespace and a Service the local cluster sends to its port."""
        return yaml.safe_dump_all((
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}},
            {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": self.service, "namespace": self.namespace,
                          "annotations": {ADDRESS_ANNOTATION: f"127.0.0.1:{self.port}"}},
             "spec": {"ports": [{"port": 443}]}}))

    def paths(self) -> list[str]:
        return [r.path for r in self.received]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        peer = request.transport.get_extra_info("peername") if request.transport else ("", 0)
        self.received.append(Received(tuple(peer[:2]), request.path, dict(request.query), dict(request.headers),
                                      review))
        path = request.path
        self.in_flight[path] = self.in_flight.get(path, 0) + 1
        self.most_in_flight[path] = max(self.most_in_flight.get(path, 0), self.in_flight[path])
        try:
            return await self._answer(path.strip("/").split("/"), review)
        finally:
            self.in_flight[path] -= 1

    async def _answer(self, parts: list[str], review: dict[str, Any]) -> web.StreamResponse:
        uid = review["request"]["uid"]
        version = review["apiVersion"]
        response: dict[str, Any] = {"uid": uid, "allowed": True}
        action = parts[0]
        if action == "slow":
            await asyncio.sleep(float(parts[1]))
        elif action == "warn":
            response["warnings"] = ["this is deprecated", "and so is that"]
        elif action == "deny":
            response = {"uid": uid, "allowed": False,
                        "status": {"code": 403, "reason": "Forbidden", "message": "no GPUs on Tuesdays"}}
        elif action == "deny-conflict":
            response = {"uid": uid, "allowed": False,
                        "status": {"code": 409, "reason": "Conflict", "message": "the object has been modified"}}
        elif action == "deny-with-code-200":
            response = {"uid": uid, "allowed": False, "status": {"code": 200, "message": "quota exhausted"}}
        elif action == "deny-bare":
            response = {"uid": uid, "allowed": False}
        elif action == "label":
            obj = review["request"]["object"]
            ops = [] if obj["metadata"].get("labels") else [{"op": "add", "path": "/metadata/labels", "value": {}}]
            ops.append({"op": "add", "path": f"/metadata/labels/{parts[1]}", "value": parts[2]})
            response.update(_patch(ops))
        elif action == "count":
            labels = review["request"]["object"]["metadata"].get("labels") or {}
            count = int(labels.get("count", "0")) + 1
            path = "/metadata/labels/count" if labels else "/metadata/labels"
            value = str(count) if labels else {"count": str(count)}
            response.update(_patch([{"op": "add", "path": path, "value": value}]))
        elif action == "stamp":
            response.update(_patch([{"op": "add", "path": "/spec/stamp", "value": review["request"]["operation"]},
                                    {"op": "add", "path": "/spec/smuggled", "value": True}]))
        elif action == "bad-patch":
            response.update(_patch([{"op": "remove", "path": "/spec/nothing/here"}]))
        elif action == "undecodable-patch":
            response.update({"patchType": "JSONPatch", "patch": "!!not base64!!"})
        elif action == "crash":
            return web.Response(status=500, text="panic: runtime error")
        elif action == "html":
            return web.Response(status=200, text="<html>ok</html>", content_type="text/html")
        elif action == "wrong-uid":
            response["uid"] = "not-the-request-uid"
        elif action == "wrong-version":
            version = "admission.k8s.io/v1beta1" if version.endswith("/v1") else "admission.k8s.io/v1"
        return web.json_response({"apiVersion": version, "kind": "AdmissionReview", "response": response})


def _patch(ops: list[dict[str, Any]]) -> dict[str, str]:
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
