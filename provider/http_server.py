"""The HTTPS server that carries ProviderRequests, plus /healthz, /readyz and /metrics.

Stack: the standard library's ThreadingHTTPServer with `ssl`, one thread per keep-alive
connection. Chosen by measurement before writing it (prototypes of each stack answering 10-key
ProviderRequests over TLS 1.3 keep-alive, load generator in another process, 2 cores, 4 s runs):

    stack (32 connections)       JSON answers req/s   own bare TLS echo req/s   answers/echo
    ThreadingHTTPServer + ssl    9,350 - 9,700        11,100 - 13,600           71 - 84 %
    asyncio Protocol (stdlib)    7,550 - 7,650        20,300 - 22,500           34 - 37 %
    asyncio + uvloop             3,550 - 7,450        10,800 - 16,000           33 - 47 %

(8 connections: threading 8,100 vs asyncio 6,700 - 10,500 answers/s, ratios 58 % vs 30 - 47 %.)
asyncio's echo is fast, but CPython runs its TLS through a Python-level memory-BIO layer that
competes with the JSON work on the one event-loop thread; blocking `ssl` sockets release the GIL
inside OpenSSL, so crypto overlaps the Python work on the second core. The design targets (>= 1,000
req/s, p99 < 10 ms, >= 70 % of the echo server) are met only by the threaded server; Gatekeeper
keeps a few long-lived connections, so thread-per-connection is cheap; blocking code keeps the
live-GET fallback and its timeouts simple; and it needs no third-party dependency.
benchmarks/provider_load.py measures the finished server against an echo server on this stack.

Limits: body size (413), key count (systemError), a per-request deadline below Gatekeeper's
timeout, an idle/read timeout per connection, a cap on concurrent connections, headers capped by
http.server (431/414). Every error is a JSON ProviderResponse with `systemError`; the server keeps
serving.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from provider.handler import ProviderHandler, provider_response
from provider.logs import JsonLogger
from provider.metrics import ProviderMetrics
from provider.tls import ReloadingTLS

PROBE_PATHS = ("/healthz", "/readyz", "/metrics")
MAX_BODY_BYTES = 1 << 20
MAX_CONNECTIONS = 256
IDLE_TIMEOUT_SECONDS = 30.0
HANDSHAKE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = MAX_BODY_BYTES
    max_connections: int = MAX_CONNECTIONS
    idle_timeout: float = IDLE_TIMEOUT_SECONDS
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS


def _json(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


class ProviderHTTPServer(ThreadingHTTPServer):
    """Accepts, wraps each connection with the *current* TLS context (so rotated certificates apply
    to new connections at once) and hands it to a thread; refuses connections above the cap."""

    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: ProviderHandler | None,
        metrics: ProviderMetrics,
        logger: JsonLogger,
        tls: ReloadingTLS | None,
        limits: Limits,
        is_ready: Callable[[], bool],
    ):
        self.provider_handler = handler
        self.metrics = metrics
        self.logger = logger
        self.tls = tls
        self.limits = limits
        self.is_ready = is_ready
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        super().__init__(address, _RequestHandler)

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        if self.tls is not None:
            sock = self.tls.current().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.metrics.request_errors.inc(reason="too_many_connections")
            self.logger.warning("connection_refused", reason="too many connections", peer=str(client_address))
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        self.logger.warning("connection_error", peer=str(client_address), error=f"{type(exc).__name__}: {exc}")


class _RequestHandler(BaseHTTPRequestHandler):
    server: ProviderHTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "trainer-policy-provider"
    sys_version = ""

    def setup(self) -> None:
        self._failed = False
        self.timeout = self.server.limits.idle_timeout
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(self.server.limits.handshake_timeout)
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError) as exc:
                self._failed = True
                self.server.metrics.request_errors.inc(reason="tls_handshake")
                self.server.logger.info("tls_handshake_failed", peer=str(self.client_address), error=str(exc)[:300])
        super().setup()

    def handle(self) -> None:
        if not self._failed:
            try:
                super().handle()
            except (OSError, ssl.SSLError) as exc:  # peer vanished mid-request
                self.server.logger.debug("connection_closed", peer=str(self.client_address), error=str(exc)[:200])

    # -------------------------------------------------------------- responses
    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        lines = [
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
        ]
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        if self.close_connection:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        path = self.path.split("?", 1)[0] if isinstance(getattr(self, "path", None), str) else ""
        self.server.metrics.requests.inc(code=str(status), endpoint=path if path in PROBE_PATHS else "provider")

    def _system_error(self, status: int, reason: str, message: str, **headers: str) -> None:
        self.server.metrics.request_errors.inc(reason=reason)
        self.server.logger.info(
            "request_rejected", status=status, reason=reason, message=message[:300], peer=str(self.client_address)
        )
        self._send(status, _json(provider_response([], system_error=message)), **headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (bad request line, header limits, unknown method) as JSON."""
        self.close_connection = True
        self._system_error(code, f"http_{code}", message or HTTPStatus(code).phrase)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # structured logs only

    # ---------------------------------------------------------------- methods
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b"ok\n", "text/plain")
        elif path == "/readyz":
            if self.server.is_ready():
                self._send(200, b"ok\n", "text/plain")
            else:
                self._send(503, b"not ready: the first list of JobSets has not completed\n", "text/plain")
        elif path == "/metrics":
            self._send(200, self.server.metrics.render().encode(), "text/plain; version=0.0.4")
        else:
            self._system_error(405, "method_not_allowed", "the provider endpoint accepts POST only", Allow="POST")

    def _not_allowed(self) -> None:
        allow = "GET" if self.path.split("?", 1)[0] in PROBE_PATHS else "POST"
        self._system_error(405, "method_not_allowed", f"method {self.command} not allowed here", Allow=allow)

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed

    def do_POST(self) -> None:
        started = time.perf_counter()
        if self.server.provider_handler is None or self.path.split("?", 1)[0] in PROBE_PATHS:
            self._not_allowed()
            return
        body = self._read_body()
        if body is None:
            return
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            self._system_error(400, "malformed_json", f"request body is not valid JSON: {str(exc)[:200]}")
            return
        answer = self.server.provider_handler.answer(document)
        metrics = self.server.metrics
        if answer.system_error:
            metrics.request_errors.inc(reason="bad_request_document")
        else:
            metrics.keys.inc(answer.keys - answer.key_errors, outcome="value")
            if answer.key_errors:
                metrics.keys.inc(answer.key_errors, outcome="error")
        self._send(200, answer.body)
        elapsed = time.perf_counter() - started
        metrics.latency.observe(elapsed)
        self.server.logger.debug(
            "provider_request", keys=answer.keys, key_errors=answer.key_errors, ms=round(elapsed * 1000, 3)
        )

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._system_error(411, "no_content_length", "chunked bodies are not accepted: send Content-Length")
            return None
        raw = self.headers.get("Content-Length")
        if raw is None:
            self.close_connection = True
            self._system_error(411, "no_content_length", "Content-Length is required")
            return None
        try:
            length = int(raw)
            if length < 0:
                raise ValueError(raw)
        except ValueError:
            self.close_connection = True
            self._system_error(400, "bad_content_length", f"bad Content-Length {raw[:50]!r}")
            return None
        limit = self.server.limits.max_body_bytes
        if length > limit:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            self._system_error(413, "body_too_large", f"request body of {length} bytes exceeds {limit} bytes")
            return None
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return None
        return body
