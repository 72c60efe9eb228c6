"""Whether the bytes of an HTTP/1.1 request received so far hold a whole request.

The worker (webhook/serving/readahead.py) reads requests in its poller, without a thread, and
hands a connection to a request thread only once this says the request is complete, so a client
that sends half a request holds a buffer, never a thread. Pure: bytes in, a verdict out; gunicorn
still parses the request itself, so anything odd is "complete" and left for its parser to refuse.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_HEADER_BYTES = 64 * 1024
"""Request line and headers; the API server sends well under 2 KiB."""


@dataclass(frozen=True)
class Framing:
    complete: bool
    problem: str = ""
    """Set when the request can never be served (headers too large): drop the connection."""


INCOMPLETE = Framing(False)
COMPLETE = Framing(True)


def request_framing(received: bytes | bytearray, max_body: int) -> Framing:
    """Complete once the headers and the body they announce are in. A body announced larger than
    `max_body` counts as complete once `max_body + 1` bytes of it are in: enough for the app to
    refuse it (it reads no more than that)."""
    end = received.find(b"\r\n\r\n")
    if end < 0:
        if len(received) > MAX_HEADER_BYTES:
            return Framing(False, f"request headers over {MAX_HEADER_BYTES} bytes")
        return INCOMPLETE
    body_start = end + 4
    length, chunked = _body_framing(bytes(received[:end]))
    have = len(received) - body_start
    if chunked:
        return COMPLETE if have > max_body or _chunks_complete(received, body_start) else INCOMPLETE
    if length is None:
        return COMPLETE
    return COMPLETE if have >= min(length, max_body + 1) else INCOMPLETE


def _body_framing(head: bytes) -> tuple[int | None, bool]:
    """(Content-Length, chunked) from the header block; an unreadable length is left to gunicorn."""
    length: int | None = None
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            text = value.strip()
            length = int(text) if text.isdigit() and len(text) <= 12 else 0
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    return length, chunked


def _chunks_complete(received: bytes | bytearray, pos: int) -> bool:
    """Whether a chunked body starting at `pos` has its last chunk and the blank line after it."""
    while True:
        line_end = received.find(b"\r\n", pos)
        if line_end < 0:
            return False
        size_text = bytes(received[pos:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return True  # malformed: gunicorn's parser refuses it
        if size == 0:
            rest = received[line_end + 2:]
            return rest.startswith(b"\r\n") or b"\r\n\r\n" in rest
        pos = line_end + 2 + size + 2
        if pos > len(received):
            return False
