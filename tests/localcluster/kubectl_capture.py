"""A tiny HTTPS server that records what the real kubectl sends, for protobuf and patch tests.

It answers just enough (legacy discovery, 201 with a JSON echo of the kind) for `kubectl create`
generators and `kubectl auth whoami` to complete, and keeps every request body it saw.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from demo.kubectl import KUBECTL
from tests.tls_stub import TlsStub

TOKEN = "capture-token"


@dataclass
class Captured:
    method: str
    path: str
    content_type: str
    body: bytes


@dataclass
class CaptureServer:
    workdir: Path
    requests: list[Captured] = field(default_factory=list)
    port: int = 0

    def __enter__(self) -> "CaptureServer":
        def app() -> web.Application:
            made = web.Application(client_max_size=8 * 1024 * 1024)
            made.router.add_route("*", "/{tail:.*}", self._handle)
            return made

        self._server = TlsStub(app, self.workdir / "pki", "capture", "default", "capture server")
        self.port = self._server.port
        self.kubeconfig = self._server.write_kubeconfig(self.workdir / "kubeconfig", TOKEN, namespace="default")
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append(Captured(request.method, request.path_qs,
                                      request.headers.get("Content-Type", ""), body))
        if request.method == "POST":
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success",
                                      "metadata": {"name": "captured"}}, status=201)
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "reason": "NotFound", "code": 404}, status=404)

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(self.workdir)}
        return subprocess.run([KUBECTL, "--cache-dir", str(self.workdir / "cache"), *args],
                              capture_output=True, text=True, env=env, timeout=60)

    def protobuf_posts(self) -> list[Captured]:
        return [r for r in self.requests
                if r.method == "POST" and r.content_type.startswith("application/vnd.kubernetes.protobuf")]
