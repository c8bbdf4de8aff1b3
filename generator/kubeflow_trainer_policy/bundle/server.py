"""An HTTP(S) server for built bundles, as OPA's bundle downloader polls it.

`GET /<name>.tar.gz` answers the file with a strong `ETag` (the SHA-256 of its bytes); a request whose
`If-None-Match` lists that ETag gets 304 and no body. The ETag is recomputed whenever the file's
size, mtime or inode change, so a rebuilt bundle (written to a temporary file, then renamed) is
served with a new ETag at the next poll. Only plain file names directly in the folder are served.
"""

from __future__ import annotations

import hashlib
import re
import ssl
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

BUNDLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.tar\.gz$")
CONTENT_TYPE = "application/gzip"


@dataclass(frozen=True)
class _Entry:
    stamp: tuple[int, int, int]
    etag: str
    body: bytes


class BundleStore:
    """Bundle files of one folder, read and hashed once per version of each file."""

    def __init__(self, root: Path):
        self.root = root
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> _Entry | None:
        path = self.root / name
        try:
            stat = path.stat()
        except OSError:
            return None
        if not path.is_file():
            return None
        stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None and entry.stamp == stamp:
                return entry
        try:
            body = path.read_bytes()
        except OSError:
            return None
        entry = _Entry(stamp, f'"sha256:{hashlib.sha256(body).hexdigest()}"', body)
        with self._lock:
            self._entries[name] = entry
        return entry


def etag_matches(header: str | None, etag: str) -> bool:
    """RFC 9110 If-None-Match: `*` or a comma-separated list; weak tags compare by their opaque part."""
    if not header:
        return False
    if header.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in header.split(","))


class BundleRequestHandler(BaseHTTPRequestHandler):
    server_version = "trainer-policy-bundles"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    store: BundleStore
    quiet: bool = True

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _not_allowed(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"method {self.command} not allowed: use GET", allow="GET, HEAD")

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _answer(self, with_body: bool) -> None:
        target = urlsplit(self.path)
        name = unquote(target.path).removeprefix("/")
        if not BUNDLE_NAME.match(name) or target.query:
            self._error(
                HTTPStatus.BAD_REQUEST,
                f"malformed bundle path {self.path!r}: expected /<name>.tar.gz (letters, digits, '.', '_', '-')",
            )
            return
        entry = self.store.get(name)
        if entry is None:
            self._error(HTTPStatus.NOT_FOUND, f"no bundle {name} in this server's folder")
            return
        if etag_matches(self.headers.get("If-None-Match"), entry.etag):
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("ETag", entry.etag)
            self.end_headers()
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(entry.body)))
        self.send_header("ETag", entry.etag)
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if with_body:
            self.wfile.write(entry.body)

    def _error(self, status: HTTPStatus, message: str, allow: str | None = None) -> None:
        body = (message + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if allow:
            self.send_header("Allow", allow)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        if not self.quiet:
            super().log_message(format, *args)


def make_server(
    root: Path, host: str, port: int, cert_file: str | None = None, key_file: str | None = None, quiet: bool = True
) -> ThreadingHTTPServer:
    handler = type("Handler", (BundleRequestHandler,), {"store": BundleStore(root), "quiet": quiet})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    if cert_file:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert_file, key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def server_url(server: ThreadingHTTPServer, tls: bool) -> str:
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    return f"{'https' if tls else 'http'}://{shown}:{port}/"


def bundle_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_file() and BUNDLE_NAME.match(p.name)) if root.is_dir() else []
