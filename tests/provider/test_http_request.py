"""The request-head parser: its fast path never disagrees with the line-by-line parser."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy_provider.http_request import HeadError, RequestHead, _parse_strictly, parse_head

PIECES = st.sampled_from(
    [
        b"POST",
        b"GET",
        b"BREW",
        b"post",
        b" ",
        b"/",
        b"/healthz?x=1",
        b"HTTP/1.1",
        b"HTTP/1.0",
        b"HTTP/2",
        b"\r\n",
        b"\n",
        b"\r",
        b":",
        b"Host",
        b"Content-Length",
        b"content-length",
        b"Transfer-Encoding",
        b"Connection",
        b"close",
        b"keep-alive",
        b"Keep-Alive",
        b"chunked",
        b"12",
        b"-1",
        b"0x1",
        b"\t",
        b"x y",
        b"\x00",
        b"\xff",
        b"9" * 20,
    ]
)
HEADS = st.lists(PIECES, max_size=30).map(b"".join)
WELL_FORMED = st.builds(
    lambda method, target, version, headers: method + b" " + target + b" " + version + b"".join(headers),
    st.sampled_from([b"POST", b"GET", b"PUT", b"BREW"]),
    st.sampled_from([b"/", b"/healthz", b"/x?y"]),
    st.sampled_from([b"HTTP/1.1", b"HTTP/1.0"]),
    st.lists(
        st.builds(
            lambda name, value: b"\r\n" + name + b":" + value,
            st.sampled_from([b"Host", b"Content-Length", b"CONTENT-LENGTH", b"Connection", b"Transfer-Encoding"]),
            st.sampled_from([b" 5", b"5", b" 12 ", b" close", b"Keep-Alive", b" x", b"", b" -3", b"\t7"]),
        ),
        max_size=6,
    ),
)


@settings(max_examples=3000, deadline=None)
@given(head=st.one_of(HEADS, WELL_FORMED))
def test_fast_path_agrees_with_the_strict_parser(head: bytes) -> None:
    assert parse_head(head) == _parse_strictly(head)


def test_examples() -> None:
    assert parse_head(b"POST /?q HTTP/1.1\r\nContent-Length: 7\r\nConnection: close") == RequestHead(
        "POST", "/", 7, False
    )
    assert parse_head(b"GET /healthz HTTP/1.0\r\nConnection: Keep-Alive") == RequestHead("GET", "/healthz", None, True)
    duplicate = parse_head(b"POST / HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7")
    assert isinstance(duplicate, HeadError) and (duplicate.status, duplicate.reason) == (
        400,
        "duplicate_content_length",
    )
