"""The API server proper: authenticate, route, and run reads and writes against the store.

`ApiServer.handle` is the single aiohttp handler. Resource verbs live in `reads.py`,
`writes.py` and `watching.py`, which take the server as a `server_state.ServerState` and never
import this module; this module holds the cluster state and the non-resource endpoints
(discovery, OpenAPI, /version, health).
"""

from __future__ import annotations

import logging
from pathlib import Path

from aiohttp import web

from localcluster.apiserver import discovery, openapi, pod_logs, reads, tokens, watching, writes
from localcluster.apiserver.admission import WebhookDispatcher
from localcluster.authorization import Authorizer
from localcluster.clock import TimeSource
from localcluster.apiserver.codec import acceptable
from localcluster.errors import ApiError, internal, method_not_allowed, not_acceptable
from localcluster.apiserver.responses import Context, error_response, json_response, read_body
from localcluster.resources import Registry
from localcluster.apiserver.routing import not_found_path, resolve
from localcluster.store import Store
from localcluster.rbac.requests import request_attributes
from localcluster.users import Authenticator

log = logging.getLogger("localcluster.apiserver.server")

PUBLIC_PATHS = {"/version", "/healthz", "/livez", "/readyz"}



class ApiServer:
    def __init__(self, store: Store, registry: Registry, clock: TimeSource, auth: Authenticator,
                 address: str = "127.0.0.1", authorizer: Authorizer | None = None) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock
        self.auth = auth
        self.authorizer = authorizer or Authorizer(store)
        self.address = address
        self.webhooks: WebhookDispatcher | None = None
        self.pod_logs_dir: Path | None = None  # where process pods' container logs are (the kubelets')
        self.bookmark_interval = 60.0
        self.watch_timeout_range = (1800.0, 3600.0)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._handle(request)
        except ApiError as exc:
            return error_response(exc)
        except web.HTTPException:
            raise
        except (ConnectionResetError, OSError) as exc:
            log.debug("client went away: %s", exc)
            raise
        except Exception as exc:  # noqa: BLE001 - the server must answer a Status, never a traceback
            log.exception("internal error on %s %s", request.method, request.path)
            return error_response(internal(f"{type(exc).__name__}: {exc}"))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path in PUBLIC_PATHS:
            return self._public(path)
        user = self.auth.authenticate(request.headers.get("Authorization"))
        user = self.auth.impersonate(user, request.headers)
        self.authorizer.check(user, request_attributes(request.method, path, request.query))
        if not acceptable(request.headers.get("Accept", "")):
            raise not_acceptable(["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"])
        group = path.split("/")[2] if path.startswith("/apis/") else ""
        if group and discovery.api_group(self.registry, group) is None:
            # no handler claims an unknown group: Go's http.NotFound answers, in plain text, not a Status
            return web.Response(status=404, text="404 page not found\n", charset="utf-8",
                                headers={"X-Content-Type-Options": "nosniff"})
        target = resolve(self.registry, path)
        if target is None:
            return self._non_resource(request, path)
        body = await read_body(request)
        ctx = Context(request, target, user, body)
        method = request.method
        if method == "GET":
            if target.subresource == "log":
                return await pod_logs.serve(self, ctx)
            if not target.name and not target.subresource and reads.is_watch(ctx):  # a GET of one object ignores ?watch
                return await watching.watch(self, ctx)
            if not target.name:
                return reads.list_objects(self, ctx)
            return reads.get_object(self, ctx)
        if method == "POST":
            if target.name and target.subresource not in ("binding", "token"):
                raise method_not_allowed()
            if target.subresource == "token":
                return await tokens.create(self, ctx)
            return await writes.create(self, ctx)
        if method == "PUT" and target.name:
            return await writes.update(self, ctx)
        if method == "PATCH" and target.name:
            return await writes.patch(self, ctx)
        if method == "DELETE":
            if target.name:
                return await writes.delete(self, ctx)
            return await writes.delete_collection(self, ctx)
        raise method_not_allowed()

    def _public(self, path: str) -> web.Response:
        if path == "/version":
            return json_response(discovery.KUBE_VERSION)
        return web.Response(text="ok", content_type="text/plain")

    def _non_resource(self, request: web.Request, path: str) -> web.StreamResponse:
        if request.method != "GET":
            raise not_found_path()
        accept = request.headers.get("Accept", "")
        parts = [p for p in path.split("/") if p]
        if path == "/api":
            if discovery.wants_aggregated(accept):
                return json_response(discovery.aggregated(self.registry, True), discovery.AGGREGATED_V2)
            return json_response(discovery.api_versions(f"{self.address}"))
        if path == "/apis":
            if discovery.wants_aggregated(accept):
                return json_response(discovery.aggregated(self.registry, False), discovery.AGGREGATED_V2)
            return json_response(discovery.api_group_list(self.registry))
        if path == "/api/v1":
            return json_response(discovery.api_resource_list(self.registry, "", "v1"))
        if len(parts) == 2 and parts[0] == "apis":
            api_group = discovery.api_group(self.registry, parts[1])
            if api_group is None:
                raise not_found_path()
            return json_response(api_group)
        if len(parts) == 3 and parts[0] == "apis":
            if not self.registry.in_group_version(parts[1], parts[2]):
                raise not_found_path()
            return json_response(discovery.api_resource_list(self.registry, parts[1], parts[2]))
        if path == "/openapi/v3":
            return json_response(openapi.v3_index(self.registry))
        if parts[:2] == ["openapi", "v3"] and len(parts) >= 4:
            if parts[2] == "api" and len(parts) == 4:
                group, version = "", parts[3]
            elif parts[2] == "apis" and len(parts) == 5:
                group, version = parts[3], parts[4]
            else:
                raise not_found_path()
            document = openapi.v3_document(self.registry, group, version)
            if document is None:
                raise not_found_path()
            return json_response(document)
        if path == "/openapi/v2":
            return json_response(openapi.v2_document(self.registry))
        raise not_found_path()
