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
_TOKEN_CHARS = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_PLAIN_HEAD = re.compile(
    rb"(" + _TOKEN_CHARS + rb"+) ([^ \r\n]+) HTTP/1\.([01])((?:\r\n" + _TOKEN_CHARS + rb"+:[^\r\n]*)*)"
)
"""A well-formed head in one regex match (the common case); anything else goes through `_parse_strictly`."""


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
    """Parse `head` (request line and headers, without the final blank line).

    Fast path: one regex match and a few byte searches accept a well-formed head; any head it does not
    accept outright is parsed line by line by `_parse_strictly`, which alone decides errors."""
    match = _PLAIN_HEAD.fullmatch(head)
    if match is not None:
        method = match.group(1).decode("ascii")
        headers = match.group(4)
        lowered = headers.lower()
        at = lowered.find(b"\r\ncontent-length:")
        if (
            method in KNOWN_METHODS
            and b"\r\ntransfer-encoding:" not in lowered
            and (at < 0 or lowered.find(b"\r\ncontent-length:", at + 2) < 0)
            and headers.count(b"\r\n") <= MAX_HEADERS
        ):
            length: int | None = None
            if at >= 0:
                end = headers.find(b"\r\n", at + 2)
                raw = headers[at + 17 : end if end >= 0 else len(headers)].strip()
                length = int(raw) if raw.isdigit() and len(raw) <= 18 else -1
            if length != -1:
                at = lowered.rfind(b"\r\nconnection:")
                connection = b""
                if at >= 0:
                    end = lowered.find(b"\r\n", at + 2)
                    connection = lowered[at + 13 : end if end >= 0 else len(lowered)].strip()
                keep_alive = b"close" not in connection if match.group(3) == b"1" else b"keep-alive" in connection
                return RequestHead(method, match.group(2).decode("latin-1").split("?", 1)[0], length, keep_alive)
    return _parse_strictly(head)


def _parse_strictly(head: bytes) -> RequestHead | HeadError:
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
