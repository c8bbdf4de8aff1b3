"""An HTTP(S) server for built bundles, as OPA's bundle downloader polls it.

`GET /<name>.tar.gz` answers the file with a strong `ETag` (the SHA-256 of its bytes); a request whose
`If-None-Match` lists that ETag gets 304 and no body. The ETag is recomputed whenever the file's
size, mtime or inode change, so a rebuilt bundle (written to a temporary file, then renamed) is
served with a new ETag at the next poll. Only regular files directly in the folder (never a symlink, which
could point anywhere) that are OPA bundles (a gzipped tar, within the bundle limits, with a .manifest) are
served: a stray `*.tar.gz` is not, whatever its name.

With a certificate, the TLS handshake runs in each connection's own thread, bounded by
HANDSHAKE_TIMEOUT_SECONDS, never in the accept loop: there one client that connects and sends nothing
would block every other client until it left. A connection that then sends no request within
IDLE_TIMEOUT_SECONDS is closed, so silent clients do not hold threads forever.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import ssl
import stat
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kubeflow_trainer_policy.bundle.archive import ArchiveLimits, read_archive
from kubeflow_trainer_policy.bundle.build import MANIFEST
from kubeflow_trainer_policy.errors import InputError

BUNDLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.tar\.gz$")
CONTENT_TYPE = "application/gzip"
HANDSHAKE_TIMEOUT_SECONDS = 10.0
"""Seconds a client has to complete the TLS handshake after connecting (OPA's takes milliseconds)."""
IDLE_TIMEOUT_SECONDS = 60.0
"""Seconds a connection may wait before (or between) requests, and a blocked read or write may take."""


@dataclass(frozen=True)
class _Entry:
    stamp: tuple[int, int, int]
    etag: str
    body: bytes


class BundleStore:
    """Bundle files of one folder, read, checked and hashed once per version of each file."""

    def __init__(self, root: Path, limits: ArchiveLimits | None = None):
        self.root = root
        self.limits = limits or ArchiveLimits.from_env()
        self._entries: dict[str, _Entry | tuple[int, int, int]] = {}
        """A served bundle, or the stamp of a file version that is not one."""
        self._lock = threading.Lock()

    def get(self, name: str) -> _Entry | None:
        if not BUNDLE_NAME.match(name):
            return None
        try:
            # O_NOFOLLOW: a symlink in the folder is refused when opened, not checked before (no race)
            fd = os.open(self.root / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_size > self.limits.max_total_bytes:
                return None
            stamp = (status.st_ino, status.st_size, status.st_mtime_ns)
            with self._lock:
                known = self._entries.get(name)
            if isinstance(known, _Entry) and known.stamp == stamp:
                return known
            if known == stamp:
                return None  # this version of the file was found not to be a bundle
            try:
                body = handle.read(self.limits.max_total_bytes + 1)
            except OSError:
                return None
        entry: _Entry | tuple[int, int, int] = stamp
        if len(body) <= self.limits.max_total_bytes and _is_bundle(body, self.limits):
            entry = _Entry(stamp, f'"sha256:{hashlib.sha256(body).hexdigest()}"', body)
        with self._lock:
            self._entries[name] = entry
        return entry if isinstance(entry, _Entry) else None


def _is_bundle(body: bytes, limits: ArchiveLimits) -> bool:
    try:
        files = read_archive(body, limits)
    except InputError:
        return False
    return MANIFEST in files


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
    timeout = IDLE_TIMEOUT_SECONDS  # StreamRequestHandler applies it to the connection's socket

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


class BundleServer(ThreadingHTTPServer):
    """ThreadingHTTPServer whose TLS handshakes run in the connection threads, each within a deadline."""

    daemon_threads = True
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS

    def finish_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(self.handshake_timeout)
            try:
                request.do_handshake()
            except (OSError, ssl.SSLError):  # a timeout, a client that left or spoke no TLS: drop it quietly
                return  # process_request_thread closes the socket
        super().finish_request(request, client_address)


def make_server(
    root: Path,
    host: str,
    port: int,
    cert_file: str | None = None,
    key_file: str | None = None,
    quiet: bool = True,
    limits: ArchiveLimits | None = None,
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS,
) -> ThreadingHTTPServer:
    handler = type("Handler", (BundleRequestHandler,), {"store": BundleStore(root, limits), "quiet": quiet})
    server = BundleServer((host, port), handler)
    server.handshake_timeout = handshake_timeout
    if cert_file:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert_file, key_file)
        # The handshake waits for the client: done on accept, it would stall the accept loop (see the module docs).
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    return server


def server_url(server: ThreadingHTTPServer, tls: bool) -> str:
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    return f"{'https' if tls else 'http'}://{shown}:{port}/"


def bundle_files(root: Path, limits: ArchiveLimits | None = None) -> list[str]:
    """The names the server would serve now."""
    if not root.is_dir():
        return []
    store = BundleStore(root, limits)
    return sorted(p.name for p in root.iterdir() if store.get(p.name) is not None)
