"""kubeapi/http11.py: the request the transport writes and the responses it reads, byte for byte.

The transport's tests (test_transport.py) run these over real TLS connections; here the framing
rules are a table, and a property checks that any response a server may frame (a length, any split
into chunks, or the connection's end) is read back as it was sent.
"""

from __future__ import annotations

import io
import socket
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeapi.http11 import (MAX_FIELDS, MAX_INTERIM, MAX_LINE, BadResponse, Disconnected, IncompleteBody,
                            SocketReader, read_response, request_bytes)


def read(raw: bytes, method: str = "GET") -> tuple[int, dict[str, str], bytes, bool]:
    response = read_response(io.BytesIO(raw), method)
    return response.status, dict(response.fields), response.body, response.keep_alive


def test_a_request_is_one_block_with_its_host_and_its_body_length() -> None:
    assert request_bytes("PATCH", "/api/v1/x?dryRun=All", "10.0.0.1:6443",
                         {"Authorization": "Bearer t", "Content-Type": "application/merge-patch+json"}, b"{}") == (
        b"PATCH /api/v1/x?dryRun=All HTTP/1.1\r\nHost: 10.0.0.1:6443\r\nAccept-Encoding: identity\r\n"
        b"Authorization: Bearer t\r\nContent-Type: application/merge-patch+json\r\nContent-Length: 2\r\n\r\n{}")


@pytest.mark.parametrize("method, body, length", [
    ("GET", None, None),
    ("DELETE", None, None),
    ("POST", None, b"0"),  # a method that carries a body says it is empty
    ("POST", b"", b"0"),
    ("PUT", "ü".encode(), b"2"),
    ("DELETE", b"{}", b"2"),
])
def test_content_length_is_sent_for_a_body_and_for_methods_that_carry_one(method: str, body: bytes | None,
                                                                          length: bytes | None) -> None:
    raw = request_bytes(method, "/", "h", {}, body)
    head, _, rest = raw.partition(b"\r\n\r\n")
    lengths = [line.split(b": ")[1] for line in head.split(b"\r\n") if line.startswith(b"Content-Length")]
    assert lengths == ([] if length is None else [length]) and rest == (body or b"")


@pytest.mark.parametrize("method, name, value, target", [
    ("GET", "X-Evil", "a\r\nX-Injected: 1", "/"),
    ("GET", "X-Evil", "a\nb", "/"),
    ("GET", "X-Evil", "a\0b", "/"),
    ("GET", "Bad Name", "v", "/"),
    ("GET", "Bad:Name", "v", "/"),
    ("GET", "", "v", "/"),
    ("GET", "X-Ok", "v", "/a b"),
    ("GET", "X-Ok", "v", "/a\r\nHost: evil"),
    ("GET", "X-Ok", "v", "/a\tb"),
    ("GET", "X-Ok", "v", "/a\x7fb"),
    ("GET", "X-Ok", "v", "/caf\u00e9"),
    ("GET", "X-Ok", "v", ""),
    ("GET /x HTTP/1.1\r\nX:", "X-Ok", "v", "/"),
    ("GET\x00", "X-Ok", "v", "/"),
    ("POST", "Content-Length", "0", "/"),  # the fields that frame the message are written here only
    ("POST", "transfer-encoding", "chunked", "/"),
    ("GET", "Host", "elsewhere", "/"),
    ("GET", "Accept-Encoding", "gzip", "/"),
])
def test_a_method_field_or_target_that_could_split_or_reframe_the_request_is_refused(
        method: str, name: str, value: str, target: str) -> None:
    with pytest.raises(ValueError):
        request_bytes(method, target, "h", {name: value}, None)


OK = b"HTTP/1.1 200 OK\r\n"

READ = [
    # (id, raw response, method, (status, fields, body, keep_alive))
    ("length", OK + b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
     "GET", (200, {"content-type": "application/json", "content-length": "2"}, b"{}", True)),
    ("bytes past the length are the next response's", OK + b"Content-Length: 2\r\n\r\n{}HTTP/1.1",
     "GET", (200, {"content-length": "2"}, b"{}", True)),
    ("chunked, extensions and trailers", OK + b"Transfer-Encoding: chunked\r\n\r\n"
     b"3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
     "GET", (200, {"transfer-encoding": "chunked"}, b"abc0123456789", True)),
    ("chunked wins over a length, and the connection ends", OK + b"Content-Length: 99\r\nTransfer-Encoding: chunked"
     b"\r\n\r\n1\r\nx\r\n0\r\n\r\n", "GET", (200, {"content-length": "99", "transfer-encoding": "chunked"}, b"x", False)),
    ("Transfer-Encoding in any case", OK + b"Transfer-Encoding: Chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
     "GET", (200, {"transfer-encoding": "Chunked"}, b"x", True)),
    ("no framing: to the end, then closed", OK + b"\r\nall of it",
     "GET", (200, {}, b"all of it", False)),
    ("Connection: close", OK + b"Connection: Close\r\nContent-Length: 0\r\n\r\n",
     "GET", (200, {"connection": "Close", "content-length": "0"}, b"", False)),
    ("HTTP/1.0", b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
     "GET", (200, {"content-length": "1"}, b"x", False)),
    ("HEAD has no body", OK + b"Content-Length: 10\r\n\r\n",
     "HEAD", (200, {"content-length": "10"}, b"", True)),
    ("204 has no body", b"HTTP/1.1 204 No Content\r\n\r\n",
     "DELETE", (204, {}, b"", True)),
    ("304 has no body", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
     "GET", (304, {"content-length": "5"}, b"", True)),
    ("interim responses are skipped", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: 1\r\n\r\n"
     + b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n",
     "POST", (429, {"retry-after": "3", "content-length": "0"}, b"", True)),
    ("a repeated field is one list, names in lower case", OK + b"Warning: 299 - \"a\"\r\nWARNING: 299 - \"b\"\r\n"
     b"Content-Length: 0\r\n\r\n", "GET", (200, {"warning": '299 - "a", 299 - "b"', "content-length": "0"}, b"", True)),
    ("a reason phrase may be empty, LF alone ends a line", b"HTTP/1.1 404\nContent-Length: 0\n\n",
     "GET", (404, {"content-length": "0"}, b"", True)),
    ("a value keeps its inner spaces", OK + b"X:   a  b  \r\nContent-Length: 0\r\n\r\n",
     "GET", (200, {"x": "a  b", "content-length": "0"}, b"", True)),
]


@pytest.mark.parametrize("raw, method, expected", [case[1:] for case in READ], ids=[case[0] for case in READ])
def test_a_response_is_read_as_its_framing_says(raw: bytes, method: str,
                                                expected: tuple[int, dict[str, str], bytes, bool]) -> None:
    assert read(raw, method) == expected


REFUSED = [
    ("nothing at all: the server closed the connection", b"", Disconnected),
    ("not HTTP", b"SSH-2.0-OpenSSH_9.6\r\n\r\n", BadResponse),
    ("HTTP/2 status line", b"HTTP/2 200\r\n\r\n", BadResponse),
    ("a status of two digits", b"HTTP/1.1 20 OK\r\n\r\n", BadResponse),
    ("a status of four digits", b"HTTP/1.1 2000 OK\r\n\r\n", BadResponse),
    ("a status line longer than the limit", b"HTTP/1.1 200 " + b"x" * MAX_LINE + b"\r\n\r\n", BadResponse),
    ("a field line longer than the limit", OK + b"X: " + b"x" * MAX_LINE + b"\r\n\r\n", BadResponse),
    ("more fields than the limit", OK + b"X: 1\r\n" * (MAX_FIELDS + 1) + b"\r\n", BadResponse),
    ("a field without a colon", OK + b"no colon here\r\n\r\n", BadResponse),
    ("space before the colon", OK + b"Content-Length : 1\r\n\r\nx", BadResponse),
    ("a field line folded onto the next", OK + b"X: a\r\n b\r\n\r\n", BadResponse),
    ("the end inside the fields", OK + b"Content-Length: 1\r\n", IncompleteBody),
    ("a length that is not a number", OK + b"Content-Length: 1e3\r\n\r\n", BadResponse),
    ("a negative length", OK + b"Content-Length: -1\r\n\r\n", BadResponse),
    ("a length past 64 bits", OK + b"Content-Length: 9999999999999999999999\r\n\r\n", BadResponse),
    ("a chunk size past 60 bits", OK + b"Transfer-Encoding: chunked\r\n\r\n" + b"f" * 16 + b"\r\n", BadResponse),
    ("a status under 100", b"HTTP/1.1 099 Odd\r\n\r\n", BadResponse),
    ("101 unasked", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", BadResponse),
    ("interim responses without end", b"HTTP/1.1 100 Continue\r\n\r\n" * (MAX_INTERIM + 1), BadResponse),
    ("two different lengths", OK + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nxx", BadResponse),
    ("a body shorter than its length", OK + b"Content-Length: 10\r\n\r\nshort", IncompleteBody),
    ("a coding that is not chunked", OK + b"Transfer-Encoding: gzip\r\n\r\nxx", BadResponse),
    ("chunked then gzip", OK + b"Transfer-Encoding: chunked, gzip\r\n\r\n", BadResponse),
    ("gzip then chunked", OK + b"Transfer-Encoding: gzip, chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", BadResponse),
    ("chunked twice", OK + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", BadResponse),
    ("a chunk size that is not hex", OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", BadResponse),
    ("a chunk longer than it said", OK + b"Transfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n", BadResponse),
    ("the end inside a chunk", OK + b"Transfer-Encoding: chunked\r\n\r\n5\r\nab", IncompleteBody),
    ("the end before the last chunk", OK + b"Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n", IncompleteBody),
]


@pytest.mark.parametrize("raw, error", [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_a_response_that_breaks_the_rules_is_refused_with_its_reason(raw: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        read(raw)


def test_a_closed_connection_and_a_cut_body_are_connection_errors_a_bad_answer_is_not() -> None:
    # the transport resends on the first (a reused connection gone stale); the second fails the
    # request as an OSError; the third is "not an HTTP answer"
    assert issubclass(Disconnected, ConnectionResetError) and issubclass(IncompleteBody, ConnectionError)
    assert not issubclass(BadResponse, OSError)


FIELD_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).filter(
    lambda name: name not in ("content-length", "transfer-encoding", "connection"))
FIELD_VALUES = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), max_size=30)


@given(status=st.integers(200, 599).filter(lambda code: code not in (204, 304)),
       fields=st.dictionaries(FIELD_NAMES, FIELD_VALUES, max_size=8),
       body=st.binary(max_size=3000),
       framing=st.sampled_from(["length", "chunked", "close"]),
       cuts=st.lists(st.integers(1, 3000), max_size=6))
def test_any_framing_of_a_response_reads_back_as_sent(status: int, fields: dict[str, str], body: bytes,
                                                       framing: str, cuts: list[int]) -> None:
    head = f"HTTP/1.1 {status} Whatever\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    if framing == "length":
        raw = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    elif framing == "chunked":
        points = sorted({0, len(body), *(cut for cut in cuts if cut < len(body))})
        chunks = [body[a:b] for a, b in zip(points, points[1:])]
        raw = (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + b"".join(
            f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for chunk in chunks) + b"0\r\n\r\n"
    else:
        raw = (head + "\r\n").encode() + body
    after = b"HTTP/1.1 200 next" if framing != "close" else b""
    stream = io.BytesIO(raw + after)
    response = read_response(stream, "GET")
    got_status, got_fields, got_body, keep_alive = response.status, dict(response.fields), response.body, response.keep_alive
    assert (got_status, got_body, keep_alive) == (status, body, framing != "close")
    assert stream.read() == after  # not a byte of the next one read, none of this one left
    assert {name: got_fields[name] for name in fields} == {name: value.strip() for name, value in fields.items()}


def test_responses_back_to_back_on_one_connection_are_read_one_by_one() -> None:
    stream = io.BytesIO(OK + b"Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX-T: 1\r\n\r\n"
                        + b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 3\r\n\r\ncde"
                        + b"HTTP/1.1 204 No Content\r\n\r\n" + OK + b"Content-Length: 0\r\n\r\n")
    assert [read_response(stream, "GET").body for _ in range(4)] == [b"ab", b"cde", b"", b""]
    assert stream.read() == b""


def trickled(data: bytes, step: int) -> SocketReader:
    """A reader on one end of a socket pair whose other end sends `data` `step` bytes at a time."""
    ours, theirs = socket.socketpair()

    def send() -> None:
        for start in range(0, len(data), step):
            theirs.sendall(data[start:start + step])
        theirs.close()
    threading.Thread(target=send, daemon=True).start()
    ours.settimeout(5)
    return SocketReader(ours)


@pytest.mark.parametrize("step", [1, 7, 65536])
def test_a_socket_reader_reads_what_trickles_in_and_shows_what_is_left(step: int) -> None:
    first = OK + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    stray = b"HTTP/1.1 200 stray\r\nContent-Length: 5\r\n\r\nstray"
    reader = trickled(first + stray, step)
    assert read_response(reader, "GET").body == b"hello"
    # what the server sent past its framing is in view (the transport drops such a connection)
    assert reader.read(len(stray)) == stray and reader.buffered == 0
    assert reader.read() == b"" and reader.readline(10) == b""


def test_a_socket_reader_keeps_to_its_line_limit_and_reads_to_the_end() -> None:
    reader = trickled(b"abcdef\nrest of it", 2)
    assert reader.readline(4) == b"abcd"
    assert reader.readline(100) == b"ef\n"
    assert reader.read() == b"rest of it"


def test_a_socket_reader_does_not_allocate_a_body_the_server_only_announced() -> None:
    reader = trickled(OK + b"Content-Length: 1099511627776\r\n\r\nshort", 64)
    with pytest.raises(IncompleteBody):
        read_response(reader, "GET")  # a terabyte announced: read as it comes, cut short, no MemoryError
