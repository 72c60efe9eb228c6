"""`request_framing`: a connection goes to a thread only with a whole request (or a refusable one)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from webhook.serving.framing import MAX_HEADER_BYTES, request_framing

HEAD = b"POST /mutate HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"


def with_length(body: bytes) -> bytes:
    return HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body


def chunked(*chunks: bytes) -> bytes:
    encoded = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
    return HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + encoded + b"0\r\n\r\n"


@pytest.mark.parametrize(
    "received, complete",
    [
        pytest.param(b"", False, id="nothing yet"),
        pytest.param(HEAD, False, id="headers without their blank line"),
        pytest.param(b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n", True, id="a GET without a body"),
        pytest.param(with_length(b'{"a": 1}'), True, id="a body of its announced length"),
        pytest.param(with_length(b'{"a": 1}')[:-1], False, id="a body one byte short"),
        pytest.param(with_length(b"{}") + b"GET / HTTP/1.1\r\n", True, id="a request with the next one behind it"),
        pytest.param(HEAD + b"Content-Length: 999999999\r\n\r\n" + b"x" * 1001, True,
                     id="a body announced over the limit once the limit is in"),
        pytest.param(HEAD + b"Content-Length: 999999999\r\n\r\n" + b"x" * 1000, False,
                     id="a body announced over the limit before the limit is in"),
        pytest.param(HEAD + b"Content-Length: twelve\r\n\r\n", True, id="an unreadable length, left to gunicorn"),
        pytest.param(chunked(b"abc", b"defg"), True, id="a chunked body with its last chunk"),
        pytest.param(chunked(b"abc", b"defg")[:-2], False, id="a chunked body without the blank line"),
    ],
)
def test_framing(received: bytes, complete: bool) -> None:
    assert request_framing(received, max_body=1000).complete is complete


def test_headers_that_never_end_are_refused() -> None:
    framing = request_framing(HEAD + b"X: " + b"y" * MAX_HEADER_BYTES, max_body=10)
    assert (framing.complete, framing.problem) == (False, f"request headers over {MAX_HEADER_BYTES} bytes")


@given(body=st.binary(max_size=200), chunks=st.lists(st.binary(min_size=1, max_size=20), max_size=5),
       use_chunks=st.booleans())
def test_every_proper_prefix_is_incomplete_and_the_whole_is_complete(body: bytes, chunks: list[bytes],
                                                                    use_chunks: bool) -> None:
    whole = chunked(*chunks) if use_chunks else with_length(body)
    assert request_framing(whole, max_body=1000).complete
    for cut in range(len(whole)):
        assert not request_framing(whole[:cut], max_body=1000).complete, cut
