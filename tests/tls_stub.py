"""The stub servers' shared part: an aiohttp application served over TLS on 127.0.0.1 (a free
port) by its own thread and event loop, so synchronous tests and clients can call it."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

import yaml
from aiohttp import web

from certs.authority import ServingFiles, service_names, write_serving_files


class TlsStub:
    """Started by the constructor; `stop()` ends it, cancelling answers still in progress."""

    def __init__(self, make_app: Callable[[], web.Application], pki: Path, service: str, namespace: str,
                 name: str) -> None:
        self.files: ServingFiles = write_serving_files(pki, service_names(service, namespace),
                                                       dt.datetime.now(dt.timezone.utc))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.files.cert, self.files.key)
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def start() -> None:
            self._runner = web.AppRunner(make_app(), shutdown_timeout=0.1)
            await self._runner.setup()
            await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context).start()
            self.port = self._runner.addresses[0][1]

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"{name} did not start")

    def write_kubeconfig(self, path: Path, token: str, namespace: str | None = None) -> Path:
        """A kubeconfig calling this server with a bearer token and trusting its CA."""
        context = {"cluster": "stub", "user": "stub", **({"namespace": namespace} if namespace else {})}
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "stub",
            "clusters": [{"name": "stub", "cluster": {"server": f"https://127.0.0.1:{self.port}",
                                                      "certificate-authority": str(self.files.ca_cert)}}],
            "users": [{"name": "stub", "user": {"token": token}}],
            "contexts": [{"name": "stub", "context": context}],
        }))
        return path

    def stop(self) -> None:
        async def stop() -> None:
            await self._runner.cleanup()
            for task in asyncio.all_tasks():  # a slow answer still sleeping
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
