"""A tiny HTTPS server that records what the real kubectl sends, for protobuf and patch tests.

It answers just enough (legacy discovery, 201 with a JSON echo of the kind) for `kubectl create`
generators and `kubectl auth whoami` to complete, and keeps every request body it saw.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from certs.authority import service_names, write_serving_files
from demo.kubectl import KUBECTL

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
        files = write_serving_files(self.workdir / "pki", service_names("capture", "default"),
                                    dt.datetime.now(dt.timezone.utc))
        self._ca = files.ca_cert
        import ssl

        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(files.cert, files.key)
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def start() -> None:
            app = web.Application(client_max_size=8 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("capture server did not start")
        self.kubeconfig = self.workdir / "kubeconfig"
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{self.port}",
                                                   "certificate-authority": str(self._ca)}}],
            "users": [{"name": "u", "user": {"token": TOKEN}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
        }))
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

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
