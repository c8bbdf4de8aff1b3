"""HTTP/1.1 request heads as the provider accepts them: strict, small, and never ambiguous.

Only what a ProviderRequest or a probe needs: a request line, headers, and a body framed by one
Content-Length. Anything that could be read two ways (duplicate Content-Length, Transfer-Encoding,
folded headers, a bad header name) is refused with a status code instead of guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_HEADER_BYTES = 65536
"""Request line plus headers; larger heads get 431 (http.server's line limit was the same)."""
MAX_HEADERS = 100
KNOWN_METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"})
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


@dataclass(frozen=True)
class RequestHead:
    method: str
    path: str
    """The target without its query string."""
    content_length: int | None
    keep_alive: bool


@dataclass(frozen=True)
class HeadError:
    """Why a head was refused: the HTTP status and a one-line message for `systemError`."""

    status: int
    reason: str
    message: str


def parse_head(head: bytes) -> RequestHead | HeadError:
    """Parse `head` (request line and headers, without the final blank line)."""
    lines = head.split(b"\r\n")
    request_line = lines[0]
    parts = request_line.split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
        return HeadError(400, "http_400", f"bad request line {request_line[:80]!r}")
    method = parts[0].decode("ascii")
    if method not in KNOWN_METHODS:
        return HeadError(501, "http_501", f"method {method[:20]!r} not implemented")
    if len(lines) - 1 > MAX_HEADERS:
        return HeadError(431, "http_431", f"more than {MAX_HEADERS} headers")
    content_length: bytes | None = None
    connection = b""
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.fullmatch(name):
            return HeadError(400, "http_400", f"bad header line {line[:80]!r}")
        lowered = name.lower()
        if lowered == b"content-length":
            if content_length is not None:
                return HeadError(400, "duplicate_content_length", "more than one Content-Length header")
            content_length = value.strip()
        elif lowered == b"transfer-encoding":
            return HeadError(411, "no_content_length", "Transfer-Encoding is not accepted: send Content-Length")
        elif lowered == b"connection":
            connection = value.strip().lower()
    length: int | None = None
    if content_length is not None:
        if not content_length.isdigit() or len(content_length) > 18:
            return HeadError(400, "bad_content_length", f"bad Content-Length {content_length[:50].decode('latin-1')!r}")
        length = int(content_length)
    keep_alive = b"close" not in connection if parts[2] == b"HTTP/1.1" else b"keep-alive" in connection
    target = parts[1].decode("latin-1")
    return RequestHead(method, target.split("?", 1)[0], length, keep_alive)
