"""pods/log, as the API server proxies it to the kubelet (the reading is `container_logs`)."""

from __future__ import annotations

from aiohttp import web

from localcluster import container_logs
from localcluster.apiserver.codec import parse_bool, parse_int
from localcluster.apiserver.responses import Context
from localcluster.apiserver.server_state import ServerState
from localcluster.errors import bad_request, not_found


async def serve(server: ServerState, ctx: Context) -> web.StreamResponse:
    t = ctx.target
    entry = server.store.get(("", "pods"), t.namespace or "", t.name)
    if entry is None:
        raise not_found("", "pods", t.name)
    pod = entry.obj
    previous = parse_bool(ctx.query.get("previous"))
    try:
        container = container_logs.container_name(pod, ctx.query.get("container"))
        log = container_logs.read(server.pod_logs_dir, pod, container, server.clock.now(), previous=previous,
                                  tail=parse_int(ctx.query.get("tailLines"), "tailLines"),
                                  limit=parse_int(ctx.query.get("limitBytes"), "limitBytes"))
    except container_logs.LogError as err:
        raise bad_request(str(err)) from None
    if log.path is None or not parse_bool(ctx.query.get("follow")):
        return web.Response(body=log.data, content_type="text/plain")
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(ctx.request)

    def current() -> dict | None:
        found = server.store.get(("", "pods"), t.namespace or "", t.name)
        return found.obj if found is not None else None

    await container_logs.follow(log, container, pod["metadata"].get("uid", ""), current, response.write)
    await response.write_eof()
    return response
