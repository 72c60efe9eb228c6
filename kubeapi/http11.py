"""HTTP/1.1 as the transport speaks it (RFC 9112): a request written in one send, a response read whole.

The standard library's `http.client` parses every response's header fields with the `email`
package and builds a request from a dozen calls; for the small requests the controller and the
gateway make by the ten thousand (a status patch, a SubjectAccessReview) that was a third of the
client's CPU per request (docs/controller.md, "HTTP/1.1 without http.client"). What the API
server sends back is plain: a status line, a few fields, a body framed by `Content-Length` or
chunked. `request_bytes` and `read_response` do just that, and check what they read: a line
longer than `MAX_LINE`, more than `MAX_FIELDS` fields or `MAX_INTERIM` interim responses, a
malformed status line, size or chunk, or a framing RFC 9112 calls an error is a `BadResponse`,
and a body cut short is `IncompleteBody`. `SocketReader` buffers a socket's bytes in view, so the
transport can tell when a server sent more than the framing said (the connection is then
dropped: those bytes must not become the next request's answer).
"""

from __future__ import annotations

import re
import socket
from typing import Mapping, Protocol

from batchgate.frozen import frozen

MAX_LINE = 65536
"""Longest status line, field line or chunk-size line accepted (http.client's limit)."""
MAX_FIELDS = 100
"""Most header (or trailer) fields accepted in one response (http.client's limit)."""
MAX_INTERIM = 10
"""Most interim (1xx) responses skipped before the final one."""
NO_BODY = frozenset({204, 304})
RECV = 65536

_UNSAFE_VALUE = re.compile(r"[\r\n\0]")
_UNSAFE_TARGET = re.compile(r"[^\x21-\x7e]")  # http.client: no controls, spaces or non-ASCII
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "accept-encoding"})
_DECIMAL = re.compile(rb"[0-9]{1,18}")  # within a 64-bit size
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


class BadResponse(Exception):
    """What came back is not an HTTP/1.x response this client can read."""


class Disconnected(ConnectionResetError):
    """The server closed the connection before a status line: on a kept-alive connection, the
    server dropped it while it was idle."""


class IncompleteBody(ConnectionError):
    """The connection ended inside a response."""


class Reader(Protocol):
    def readline(self, limit: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


@frozen
class Response:
    status: int
    fields: Mapping[str, str]  # names in lower case; a repeated field's values joined by ", "
    body: bytes
    keep_alive: bool  # whether the connection may carry the next request


class SocketReader:
    """A socket's bytes, buffered here rather than in an io.BufferedReader so that what is left
    after a response (`buffered`) can be seen; reads grow with what arrives, never allocated up
    front from a size the server announced."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def _fill(self) -> bool:
        data = self._sock.recv(RECV)
        self._buffer += data
        return bool(data)

    def readline(self, limit: int = -1, /) -> bytes:
        """Up to and including the next LF, at most `limit` bytes (fewer at the end of the stream)."""
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0 and (limit < 0 or end < limit):
                return self._take(end + 1)
            if 0 <= limit <= len(self._buffer):
                return self._take(limit)
            start = len(self._buffer)
            if not self._fill():
                return self._take(len(self._buffer))

    def read(self, size: int = -1, /) -> bytes:
        """`size` bytes (fewer at the end of the stream); all until the end when `size` < 0."""
        while (size < 0 or len(self._buffer) < size) and self._fill():
            pass
        return self._take(len(self._buffer) if size < 0 else min(size, len(self._buffer)))

    def _take(self, count: int) -> bytes:
        out = bytes(self._buffer[:count])
        del self._buffer[:count]
        return out


def request_bytes(method: str, target: str, host: str, fields: Mapping[str, str], body: bytes | None) -> bytes:
    """The whole request. `host` is the Host field's value; `Content-Length` is added for a body
    (and for an empty one on methods that carry one). A method or field name that is not a token,
    a value with CR, LF or NUL, a target with a control, space or non-ASCII character, or a field
    that frames the message (Host, Content-Length, Transfer-Encoding, Accept-Encoding: this
    function writes those) is a ValueError."""
    if not _TOKEN.fullmatch(method):
        raise ValueError(f"invalid method {method!r}")
    if not target or _UNSAFE_TARGET.search(target):
        raise ValueError(f"invalid request target {target!r}")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
    for name, value in fields.items():
        if not _TOKEN.fullmatch(name) or _UNSAFE_VALUE.search(value) or name.lower() in _FRAMING:
            raise ValueError(f"invalid header field {name!r}")
        lines.append(f"{name}: {value}")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


def read_response(rfile: Reader, method: str) -> Response:
    """Read one response to a `method` request from `rfile`, skipping interim (1xx) ones."""
    for _ in range(MAX_INTERIM + 1):
        status, http10 = _status_line(rfile)
        fields = _fields(rfile)
        if status >= 200:
            break
        if status == 101:
            raise BadResponse("101 Switching Protocols: no protocol was asked to switch to")
    else:
        raise BadResponse(f"more than {MAX_INTERIM} interim responses")
    keep_alive = not http10 and "close" not in fields.get("connection", "").lower()
    if method == "HEAD" or status in NO_BODY:
        return Response(status, fields, b"", keep_alive)
    coding = fields.get("transfer-encoding")
    if coding is not None:
        if coding.strip().lower() != "chunked":
            raise BadResponse(f"unsupported Transfer-Encoding {coding!r}")
        # with a Content-Length too, RFC 9112 section 6.3: the connection is not used again
        return Response(status, fields, _chunked(rfile), keep_alive and "content-length" not in fields)
    length = fields.get("content-length")
    if length is None:  # the body runs to the end of the connection
        return Response(status, fields, rfile.read(), False)
    size = _size(length.encode("latin-1"), _DECIMAL, "Content-Length")
    return Response(status, fields, _exactly(rfile, size), keep_alive)


def _line(rfile: Reader) -> bytes:
    line = rfile.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise BadResponse(f"a line longer than {MAX_LINE} bytes")
    return line


def _status_line(rfile: Reader) -> tuple[int, bool]:
    """The status code, and whether the server speaks HTTP/1.0."""
    line = _line(rfile)
    if not line:
        raise Disconnected("the server closed the connection without a response")
    version, _, rest = line.partition(b" ")
    code = rest[:3]
    if (not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit() or code < b"100"
            or rest[3:4] not in (b" ", b"\r", b"\n", b"")):
        raise BadResponse(f"not an HTTP/1.x status line: {line[:80]!r}")
    return int(code), version == b"HTTP/1.0"


def _fields(rfile: Reader) -> dict[str, str]:
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


def _exactly(rfile: Reader, size: int) -> bytes:
    data = rfile.read(size)
    if len(data) < size:
        raise IncompleteBody(f"the connection ended {size - len(data)} bytes before the body's end")
    return data


def _chunked(rfile: Reader) -> bytes:
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
