"""Request and response plumbing shared by the verb handlers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from localcluster.apiserver.codec import MAX_BODY_BYTES
from localcluster.errors import ApiError, too_large
from localcluster.apiserver.routing import Target
from localcluster.store import dumps
from localcluster.users import User


@dataclass
class Context:
    """One request as the verb handlers see it."""

    request: web.Request
    target: Target
    user: User
    body: bytes

    @property
    def query(self) -> Any:
        return self.request.query

    @property
    def accept(self) -> str:
        return self.request.headers.get("Accept", "")


async def read_body(request: web.Request) -> bytes:
    """The whole body, with or without Content-Length (chunked), capped at 3 MiB."""
    if request.method in ("GET", "HEAD"):
        return b""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise too_large()
    chunks, size = [], 0
    async for chunk in request.content.iter_chunked(65536):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def json_response(value: Any, content_type: str = "application/json", status: int = 200,
                  warnings: list[str] | None = None) -> web.Response:
    return raw_response(dumps(value), content_type, status, warnings)


def raw_response(body: bytes, content_type: str = "application/json", status: int = 200,
                 warnings: list[str] | None = None) -> web.Response:
    response = web.Response(body=body, status=status)
    response.headers["Content-Type"] = content_type
    for warning in warnings or []:
        response.headers.add("Warning", f'299 - "{warning}"')
    return response


def error_response(exc: ApiError) -> web.Response:
    return raw_response(dumps(exc.status()), status=exc.code)


def status_success(details: dict[str, Any], code: int = 200) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details, "code": code}

