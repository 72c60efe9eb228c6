"""HTTP/1.1 as the transport speaks it (RFC 9112): a request written in one send, a response read whole.

The standard library's `http.client` parses every response's header fields with the `email`
package and builds a request from a dozen calls; for the small requests the controller and the
gateway make by the ten thousand (a status patch, a SubjectAccessReview) that was a fifth of the
client's CPU per request (docs/controller.md, "The HTTP client"). What the API server sends back
is plain: a status line, a few fields, a body framed by `Content-Length` or chunked. These two
functions do just that, and check what they read: a line longer than `MAX_LINE`, more than
`MAX_FIELDS` fields, a malformed status line, size or chunk is a `BadResponse`, and a body cut
short is `IncompleteBody`; nothing waits on more than the framing promises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO, Mapping

MAX_LINE = 65536
"""Longest status line, field line or chunk-size line accepted (http.client's limit)."""
MAX_FIELDS = 100
"""Most header (or trailer) fields accepted in one response (http.client's limit)."""
NO_BODY = frozenset({204, 304})

_UNSAFE = re.compile(r"[\r\n\0]")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_DECIMAL = re.compile(rb"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")


class BadResponse(Exception):
    """What came back is not an HTTP/1.x response this client can read."""


class Disconnected(ConnectionResetError):
    """The server closed the connection before a status line: on a kept-alive connection, the
    server dropped it while it was idle."""


class IncompleteBody(ConnectionError):
    """The connection ended inside a response's body."""


@dataclass(frozen=True)
class Response:
    status: int
    fields: Mapping[str, str]  # names in lower case; a repeated field's values joined by ", "
    body: bytes
    keep_alive: bool  # whether the connection may carry the next request


def request_bytes(method: str, target: str, host: str, fields: Mapping[str, str], body: bytes | None) -> bytes:
    """The whole request. `host` is the Host field's value; `Content-Length` is added for a body
    (and for an empty one on methods that carry one). A name or value that could split the request
    (CR, LF or NUL in it, or a name that is not a token) is a ValueError, as in http.client."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
    for name, value in fields.items():
        if not _TOKEN.fullmatch(name) or _UNSAFE.search(value):
            raise ValueError(f"invalid header field {name!r}")
        lines.append(f"{name}: {value}")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    if _UNSAFE.search(target) or " " in target:
        raise ValueError(f"invalid request target {target!r}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


def read_response(rfile: BinaryIO, method: str) -> Response:
    """Read one response to a `method` request from `rfile`, skipping interim (1xx) ones."""
    while True:
        status, http10 = _status_line(rfile)
        fields = _fields(rfile)
        if not 100 <= status < 200:
            break
    keep_alive = not http10 and "close" not in fields.get("connection", "").lower()
    if method == "HEAD" or status in NO_BODY:
        return Response(status, fields, b"", keep_alive)
    coding = fields.get("transfer-encoding")
    if coding is not None:
        if coding.rsplit(",", 1)[-1].strip().lower() != "chunked":
            raise BadResponse(f"unsupported Transfer-Encoding {coding!r}")
        return Response(status, fields, _chunked(rfile), keep_alive)
    length = fields.get("content-length")
    if length is None:  # the body runs to the end of the connection
        return Response(status, fields, rfile.read(), False)
    size = _size(length.encode("latin-1"), _DECIMAL, "Content-Length")
    return Response(status, fields, _exactly(rfile, size), keep_alive)


def _line(rfile: BinaryIO) -> bytes:
    line = rfile.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise BadResponse(f"a line longer than {MAX_LINE} bytes")
    return line


def _status_line(rfile: BinaryIO) -> tuple[int, bool]:
    """The status code, and whether the server speaks HTTP/1.0."""
    line = _line(rfile)
    if not line:
        raise Disconnected("the server closed the connection without a response")
    version, _, rest = line.partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit() or rest[3:4] not in (b" ", b"\r",
                                                                                                         b"\n", b""):
        raise BadResponse(f"not an HTTP/1.x status line: {line[:80]!r}")
    return int(code), version == b"HTTP/1.0"


def _fields(rfile: BinaryIO) -> dict[str, str]:
    fields: dict[str, str] = {}
    for _ in range(MAX_FIELDS + 1):
        line = _line(rfile)
        if line in (b"\r\n", b"\n"):
            return fields
        if not line:
            raise IncompleteBody("the connection ended inside the header fields")
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise BadResponse(f"a malformed header field: {line[:80]!r}")
        key, text = name.decode("latin-1").lower(), value.strip().decode("latin-1")
        fields[key] = f"{fields[key]}, {text}" if key in fields else text
    raise BadResponse(f"more than {MAX_FIELDS} header fields")


def _size(text: bytes, digits: re.Pattern[bytes], what: str) -> int:
    text = text.strip()
    if not digits.fullmatch(text):
        raise BadResponse(f"a malformed {what}: {text[:40]!r}")
    return int(text, 16 if digits is _HEX else 10)


def _exactly(rfile: BinaryIO, size: int) -> bytes:
    data = rfile.read(size)
    if len(data) < size:
        raise IncompleteBody(f"the connection ended {size - len(data)} bytes before the body's end")
    return data


def _chunked(rfile: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        line = _line(rfile)
        if not line:
            raise IncompleteBody("the connection ended before the last chunk")
        size = _size(line.split(b";", 1)[0], _HEX, "chunk size")  # chunk extensions are ignored
        if size == 0:
            _fields(rfile)  # the trailer section, read and left
            return b"".join(parts)
        parts.append(_exactly(rfile, size))
        if _exactly(rfile, 2) != b"\r\n":
            raise BadResponse("a chunk not followed by CRLF")
