"""Serving TLS: TLS 1.3 only, optional mTLS, certificate files reloaded when they change on disk.

cert-manager (or a kubelet-projected Secret) replaces the files atomically; `ReloadingTLS.current()`
re-reads them when their stat signature changed (checked at most every `check_interval` seconds)
and keeps the last good context if the new files do not load (half-written rotation).

Python's `ssl` module serves (the system's OpenSSL), one `ServerSession` per connection, fed and drained
through memory buffers so that the server owns each socket. Why not another TLS library:
docs/performance.md.
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from dataclasses import dataclass

from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics


@dataclass(frozen=True)
class TLSFiles:
    cert_file: str
    key_file: str
    client_ca_file: str | None = None
    """When set, clients must present a certificate signed by this CA (mTLS)."""

    def paths(self) -> list[str]:
        return [p for p in (self.cert_file, self.key_file, self.client_ca_file) if p]


class ServerSession:
    """The server side of one TLS connection: `ssl.SSLObject` over two `ssl.MemoryBIO`s. Bytes from the client go
    in with `feed`, bytes for the client come out of `take_output`. Failures raise `ssl.SSLWantReadError` (feed
    more bytes), `ssl.SSLZeroReturnError` (the peer closed) or `ssl.SSLError`."""

    __slots__ = ("_incoming", "_outgoing", "_tls")

    def __init__(self, context: ssl.SSLContext) -> None:
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=True)

    def feed(self, data: bytes) -> None:
        self._incoming.write(data)

    def do_handshake(self) -> None:
        self._tls.do_handshake()

    def read(self, size: int) -> bytes:
        data = self._tls.read(size)
        if not data:
            raise ssl.SSLZeroReturnError("the peer closed the TLS session")
        return data

    def has_unread(self) -> bool:
        return bool(self._incoming.pending or self._tls.pending())

    def write(self, data: bytes) -> None:
        self._tls.write(data)

    def take_output(self) -> bytes:
        return self._outgoing.read() if self._outgoing.pending else b""

    def unwrap(self) -> None:
        self._tls.unwrap()


class ServerContext:
    library = f"stdlib ssl ({ssl.OPENSSL_VERSION})"

    def __init__(self, files: TLSFiles) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.maximum_version = ssl.TLSVersion.TLSv1_3
        context.load_cert_chain(files.cert_file, files.key_file)
        # Gatekeeper builds a new client per lookup and never resumes a session: a ticket would be wasted work,
        # and one more record after the handshake.
        context.num_tickets = 0
        if files.client_ca_file:
            context.load_verify_locations(cafile=files.client_ca_file)
            context.verify_mode = ssl.CERT_REQUIRED
        self._context = context

    def new_session(self) -> ServerSession:
        return ServerSession(self._context)


def _signature(paths: list[str]) -> tuple[tuple[int, int, int], ...]:
    out = []
    for path in paths:
        st = os.stat(path)
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class ReloadingTLS:
    def __init__(
        self,
        files: TLSFiles,
        metrics: ProviderMetrics,
        logger: JsonLogger,
        check_interval: float = 1.0,
    ):
        self.files = files
        self._metrics = metrics
        self._logger = logger
        self._check_interval = check_interval
        self._lock = threading.Lock()
        self._signature = _signature(files.paths())
        self._context = ServerContext(files)
        self._next_check = time.monotonic() + check_interval
        metrics.tls_reloads.inc(outcome="loaded")

    def current(self) -> ServerContext:
        now = time.monotonic()
        if now >= self._next_check:
            with self._lock:
                if now >= self._next_check:
                    self._next_check = now + self._check_interval
                    self._maybe_reload()
        return self._context

    def _maybe_reload(self) -> None:
        try:
            signature = _signature(self.files.paths())
        except OSError as exc:
            self._logger.warning("tls_files_unreadable", error=str(exc))
            return
        if signature == self._signature:
            return
        try:
            context = ServerContext(self.files)
        except (OSError, ssl.SSLError, ValueError) as exc:
            self._metrics.tls_reloads.inc(outcome="failed")
            self._logger.error("tls_reload_failed", error=str(exc), keeping="previous certificate")
            return
        # Counted before the new context is published: once a client sees the new certificate, the count is there.
        self._metrics.tls_reloads.inc(outcome="reloaded")
        self._context, self._signature = context, signature
        self._logger.info("tls_reloaded", files=self.files.paths())
