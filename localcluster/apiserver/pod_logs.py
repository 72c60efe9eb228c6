"""pods/log, as the API server proxies it to the kubelet: a process pod's container output from
the kubelet's log files (`<logs>/<ns>_<pod>_<uid>/<container>/<restart>.log`), with `follow`,
`previous`, `tailLines` and `limitBytes`; a simulated pod's couple of lines about what its
script did.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp import web

from localcluster.apiserver.codec import parse_bool, parse_int
from localcluster.errors import bad_request, not_found
from localcluster.apiserver.responses import Context
from localcluster.apiserver.server_state import ServerState
from localcluster.sim.kubelet import log_lines
from localcluster.sim.process_pod import log_file


FOLLOW_POLL_SECONDS = 0.2


def _container(pod: dict[str, Any], requested: str | None) -> str:
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []] + [c["name"] for c in spec.get("initContainers") or []]
    name = pod["metadata"]["name"]
    if not requested:
        if len(names) != 1:
            raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")
        return names[0]
    if requested not in names:
        raise bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def _status(pod: dict[str, Any], container: str) -> dict[str, Any]:
    return next((cs for cs in (pod.get("status") or {}).get("containerStatuses") or [] if cs.get("name") == container), {})


def _tail(data: bytes, lines: int | None) -> bytes:
    if lines is None:
        return data
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


async def serve(server: ServerState, ctx: Context) -> web.StreamResponse:
    t = ctx.target
    entry = server.store.get(("", "pods"), t.namespace or "", t.name)
    if entry is None:
        raise not_found("", "pods", t.name)
    pod = entry.obj
    container = _container(pod, ctx.query.get("container"))
    name, uid = pod["metadata"]["name"], pod["metadata"].get("uid", "")
    previous = parse_bool(ctx.query.get("previous"), "previous")
    tail = parse_int(ctx.query.get("tailLines"), "tailLines")
    limit = parse_int(ctx.query.get("limitBytes"), "limitBytes")
    root = server.pod_logs_dir
    if root is None or not log_file(root, pod, container, 0).exists():
        if not (pod.get("spec") or {}).get("nodeName"):
            raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
        if previous:
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        text = ("\n".join(log_lines(pod, container, server.clock.now())) + "\n").encode()
        return web.Response(body=_tail(text, tail)[:limit] if limit else _tail(text, tail), content_type="text/plain")
    restarts = int(_status(pod, container).get("restartCount") or 0)
    attempt = restarts - 1 if previous else restarts
    path = log_file(root, pod, container, attempt)
    if attempt < 0 or not path.exists():
        if previous:
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
    full = path.read_bytes()
    data = _tail(full, tail)
    if limit:
        data = data[:limit]
    if not parse_bool(ctx.query.get("follow"), "follow") or previous:
        return web.Response(body=data, content_type="text/plain")
    return await _follow(server, ctx, path, data, len(full), (t.namespace or "", name, uid), container, attempt)


def _read_from(path: Path, offset: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read()


async def _follow(server: ServerState, ctx: Context, path: Path, first: bytes, offset: int, pod: tuple[str, str, str],
                  container: str, attempt: int) -> web.StreamResponse:
    """Stream the file as it grows until this run of the container has ended (or the pod is gone)."""
    namespace, name, uid = pod
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(ctx.request)
    await response.write(first)
    while True:
        entry = server.store.get(("", "pods"), namespace, name)
        status = _status(entry.obj, container) if entry is not None and entry.obj["metadata"].get("uid") == uid else {}
        ended = "running" not in (status.get("state") or {}) or int(status.get("restartCount") or 0) != attempt
        chunk = _read_from(path, offset)  # read after the status: a process's output is written before it ends
        if chunk:
            offset += len(chunk)
            await response.write(chunk)
        if ended:
            break
        if not chunk:
            await asyncio.sleep(FOLLOW_POLL_SECONDS)
    await response.write_eof()
    return response
