"""The kubelets' HTTPS port, where a real kube-apiserver proxies `kubectl logs`
(GET /containerLogs/{namespace}/{pod}/{container}): every node's InternalIP is loopback and its
status names this port, so one server answers for all of them. The stand-in API server reads the
same log files itself (`container_logs` is the one reader).

It listens on loopback only and asks no credentials: kube-apiserver is given none for kubelets
(no --kubelet-client-certificate), as in the test clusters of kwok and envtest.
"""

from __future__ import annotations

import datetime as dt
import ssl
from pathlib import Path

from aiohttp import web

from localcluster import container_logs, tls
from localcluster.runner import KUBELET_DIR, ControllerContext
from localcluster.runtime.base import Controller
from localcluster.runtime.client import PODS, Api
from localcluster.runtime.informers import SharedInformers


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


def _number(request: web.Request, name: str) -> int | None:
    value = request.query.get(name)
    if value is None:
        return None
    if not value.lstrip("-").isdigit():
        raise web.HTTPBadRequest(text=f"{name}: not an integer: {value!r}")
    return int(value)


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


class KubeletServer(Controller):
    component = "kubelet-server"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.pods = self.informer(PODS, lambda kind, pod: None)
        self.root = Path(ctx.workdir) / KUBELET_DIR

    async def started(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", _healthz)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        files = tls.self_signed(self.root / "pki", ["localhost", "127.0.0.1"], dt.datetime.now(dt.timezone.utc))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(files.cert), str(files.key))
        await web.TCPSite(runner, "127.0.0.1", self.ctx.kubelet_port, ssl_context=context).start()
        self.runner = runner

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            if getattr(self, "runner", None) is not None:
                await self.runner.cleanup()

    async def sync(self, key: str) -> dt.timedelta | None:
        return None

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self.pods.get(namespace, name)
        if pod is None:
            raise web.HTTPNotFound(text=f'pod "{name}" not found')
        container = request.match_info["container"]
        try:
            container_logs.container_name(pod, container)
            log = container_logs.read(self.root / "logs", pod, container, self.now(), previous=_flag(request, "previous"),
                                      tail=_number(request, "tailLines"), limit=_number(request, "limitBytes"))
        except container_logs.LogError as err:
            raise web.HTTPBadRequest(text=str(err)) from None
        if log.path is None or not _flag(request, "follow"):
            return web.Response(body=log.data, content_type="text/plain")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await container_logs.follow(log, container, pod["metadata"].get("uid", ""),
                                    lambda: self.pods.get(namespace, name), response.write)
        await response.write_eof()
        return response
