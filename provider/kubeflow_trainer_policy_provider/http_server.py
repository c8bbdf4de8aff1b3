"""The HTTPS server that carries ProviderRequests, plus /healthz, /readyz and /metrics.

Stack: one stdlib asyncio event loop in its own thread, and a hand-written `asyncio.Protocol` per
connection that runs TLS itself through a memory-buffer session (the tls module, Python's `ssl` module; so
each connection gets the current, possibly reloaded, certificate and is counted from its TCP accept) and
parses HTTP/1.1 with the http_request module. Why this stack and not granian, uvloop or another TLS library,
with the measurements: docs/performance.md.

Gatekeeper opens a new connection for every lookup and never closes it, so the server must own every
connection from accept to close, with deadlines, a cap that idle sockets cannot exhaust and eviction, which
one event loop and one connection table give directly (a thread per idle socket cannot be evicted from
outside). And every lookup pays a TLS handshake, so nothing may add a round trip or a wait to it: TCP_NODELAY
on every connection, no session tickets (the tls module), and whatever one flight of the client produces (the
answer, the end of the handshake, an answer and its close_notify) leaves in one write.

Bounded connection handling (every connection, TLS or plain, main or health port):
- one table of open connections, counted from the TCP accept (before the TLS handshake);
- deadlines, checked by a sweeper every SWEEP_SECONDS: the TLS handshake must finish within
  `handshake_timeout`; a request must arrive complete (head and body) within `read_timeout` of its
  first byte (trickling does not extend it); a connection with no request in progress is closed
  after `idle_timeout` (1 s by default: Gatekeeper never reuses or closes its connections, so the
  server must); a connection older than `max_connection_age` is told `Connection: close` with its
  next response;
- a connection its client has already closed or reset when it is accepted is closed at once, before it
  costs a transport (a connect/close flood); at `max_connections`, a new connection makes room: first a
  connection idle after its answer, then every connection its client has closed or reset since (`_reap`:
  a flood leaves such sockets behind faster than the loop reads them), then the least useful open one
  (`eviction_rank`: silent, idle before a request, still sending, young, and last a handshake with a whole
  ClientHello); connections whose request is being answered are never evicted, so neither idle nor
  trickling sockets nor a flood can lock real clients or probes out;
- connections are accepted in slices of ACCEPT_BATCH per wake-up, so a burst waiting in the kernel's
  queue is read (and its closed sockets freed) between slices;
- a request whose source answers from memory is answered on the loop; one that may call the
  Kubernetes API (watch cache not synced) runs on a small thread pool.
Every error is a JSON ProviderResponse with `systemError`; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, fields
from http import HTTPStatus
from typing import Any

from kubeflow_trainer_policy_provider.handler import Answer, ProviderHandler, provider_response
from kubeflow_trainer_policy_provider.http_request import MAX_HEADER_BYTES, HeadError, RequestHead, parse_head
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.tls import ReloadingTLS, ServerSession

PROBE_PATHS = ("/healthz", "/readyz", "/metrics")
MAX_BODY_BYTES = 1 << 20
MAX_CONNECTIONS = 256
IDLE_TIMEOUT_SECONDS = 1.0
HANDSHAKE_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 2.0
MAX_CONNECTION_AGE_SECONDS = 300.0
SWEEP_SECONDS = 0.05
SILENCE_GRACE = 1.0
"""Seconds a connection that has sent nothing is kept from eviction before anything else: a real client
sends its TLS ClientHello at once, but a loaded event loop may take a while to read it."""
PROGRESS_GRACE = 0.1
"""Seconds a connection that just made progress (handshake done, request started) is kept from eviction."""
BLOCKING_WORKERS = 16
"""Threads for requests that may call the Kubernetes API (cache not synced)."""
ACCEPT_BATCH = 64
"""Connections accepted per wake-up of the listening socket before the loop reads the ones it has: after a
stall, a flood waiting in the kernel's queue is taken in slices, and the connections already accepted
(honest handshakes, and the flood's closes, which free their slots) are read between the slices."""
ACCEPT_RETRY_SECONDS = 0.5
"""Pause of accepting after accept() failed for want of descriptors or memory (the kernel keeps the queue)."""
REAP_PAUSE_SECONDS = 0.01
"""After a look for connections their clients already closed found none, rank eviction alone for this long."""


class InvalidSetting(ValueError):
    """A limit or setting that cannot work (zero connections, a negative timeout); names the setting."""

    def __init__(self, setting: str, reason: str):
        self.setting = setting
        self.reason = reason
        super().__init__(f"{setting}: {reason}")


def require_positive(owner: object, *, except_for: tuple[str, ...] = ()) -> None:
    """Every numeric field of a settings dataclass (but `except_for`) must be > 0 and finite."""
    for item in fields(owner):  # type: ignore[arg-type]
        if item.name in except_for:
            continue
        value = getattr(owner, item.name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not value > 0 or value == float("inf"):
            raise InvalidSetting(item.name, f"must be a positive number, got {value!r}")


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = MAX_BODY_BYTES
    max_connections: int = MAX_CONNECTIONS
    idle_timeout: float = IDLE_TIMEOUT_SECONDS
    """Seconds a connection may wait for its next request (or its first, after the handshake)."""
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS
    read_timeout: float = READ_TIMEOUT_SECONDS
    """Seconds from a request's first byte until it must be complete."""
    max_connection_age: float = MAX_CONNECTION_AGE_SECONDS

    def __post_init__(self) -> None:
        require_positive(self)


def _json(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


_REASONS = {status.value: status.phrase for status in HTTPStatus}

# connection states
HANDSHAKE, IDLE, READING, BUSY, CLOSED = range(5)
_NOT_EVICTABLE = 99


class ProviderHTTPServer:
    """One listening socket served by `_Connection` protocols on the owner's event loop."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: ProviderHandler | None,
        metrics: ProviderMetrics,
        logger: JsonLogger,
        tls: ReloadingTLS | None,
        limits: Limits,
        is_ready: Callable[[], bool],
        serve_probes: bool = True,
    ):
        self.provider_handler = handler
        self.serve_probes = serve_probes
        """False on the HTTPS port when a health port serves /healthz, /readyz and /metrics instead."""
        self.metrics = metrics
        self.logger = logger
        self.tls = tls
        self.limits = limits
        self.is_ready = is_ready
        self.connections: dict[int, _Connection] = {}
        """Open connections, least recent progress first (a connection moves to the end when it makes progress)."""
        self.executor: ThreadPoolExecutor | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._accepting = False
        self._sweeper: asyncio.TimerHandle | None = None
        self._reap_after = 0.0
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.socket = socket.create_server(address, family=family, backlog=1024)
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()
        self._answers_from_memory: Callable[[], bool] = getattr(
            getattr(handler, "source", None), "answers_from_memory", lambda: False
        )

    # ---------------------------------------------------------------- lifecycle (on the loop)
    async def start(self, loop: asyncio.AbstractEventLoop, executor: ThreadPoolExecutor) -> None:
        self.loop, self.executor = loop, executor
        self._resume_accepting()
        self._sweeper = loop.call_later(SWEEP_SECONDS, self._sweep)

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._pause_accepting()
        for connection in list(self.connections.values()):
            connection.abort()

    # ---------------------------------------------------------------- accepting: our own loop, because asyncio's
    # accepts up to its backlog (1,024) per wake-up and keeps the socket objects that `_reap` needs to itself
    def _resume_accepting(self) -> None:
        assert self.loop is not None
        if not self._accepting:
            self.loop.add_reader(self.socket.fileno(), self._accept)
            self._accepting = True

    def _pause_accepting(self) -> None:
        if self._accepting and self.loop is not None:
            self.loop.remove_reader(self.socket.fileno())
            self._accepting = False

    def _accept(self) -> None:
        assert self.loop is not None
        gone = 0
        for _ in range(ACCEPT_BATCH):
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionAbortedError:
                continue
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS, ENOMEM: the kernel keeps the queue meanwhile
                self.metrics.request_errors.inc(reason="accept_failed")
                self.logger.error("accept_failed", error=str(exc), retry_seconds=ACCEPT_RETRY_SECONDS)
                self._pause_accepting()
                self.loop.call_later(ACCEPT_RETRY_SECONDS, self._resume_accepting)
                break
            sock.setblocking(False)
            waiting = waiting_bytes(sock)
            if waiting is None:  # a flood's connect/close or reset: 1 syscall instead of a transport
                sock.close()
                gone += 1
                continue
            # Without it, an answer written while an earlier small segment is unacknowledged waits for the client's
            # delayed ACK (about 40 ms). Go's server sets it on every connection; asyncio's does only when the
            # listening socket's proto is IPPROTO_TCP, which socket.create_server's is not.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = _Connection(self, sock, address, waiting)
            if not self.admit(connection):
                sock.close()
                continue
            if waiting and not (self.tls is not None and client_hello_incomplete(waiting)):
                self.loop.create_task(self._serve(connection))
            else:  # a transport (and a TLS session) only once a whole ClientHello (or anything else) is there
                connection.watching = True
                self.loop.add_reader(sock.fileno(), self._first_bytes, connection)
        if gone:
            self.metrics.reaped.inc(gone)

    def _first_bytes(self, connection: _Connection) -> None:
        """Bytes (or the end) arrived on a connection without a transport: read them; make the transport once a
        TLS connection's ClientHello is whole (a part of one, then a reset, costs no transport or TLS session)."""
        assert self.loop is not None
        try:
            data = connection.sock.recv(PEEK_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # closed or reset before its ClientHello was whole: a flood's connection
            connection.abort()
            self.metrics.reaped.inc()
            return
        connection.early += data
        connection.arrived(connection.early)
        if self.tls is not None and not connection.hello_whole and client_hello_incomplete(connection.early):
            self.progressed(connection)  # keeps watching; the handshake deadline still runs
            return
        self.loop.remove_reader(connection.sock.fileno())
        connection.watching = False
        self.loop.create_task(self._serve(connection))

    async def _serve(self, connection: _Connection) -> None:
        assert self.loop is not None
        if connection.state == CLOSED:  # evicted or expired before its transport existed
            return
        connection.starting = True
        try:
            await self.loop.connect_accepted_socket(lambda: connection, connection.sock)
        except OSError:  # gone before its transport existed
            connection.starting = False
            connection.abort()

    # ---------------------------------------------------------------- connection table
    def admit(self, connection: _Connection) -> bool:
        """Register a new connection; at the cap, make room: a connection idle after its answer goes first,
        then every connection its client has already closed or reset (`_reap`), then the least useful one
        (`eviction_rank`). False (refuse) only when every open connection is busy being answered."""
        if len(self.connections) >= self.limits.max_connections:
            now = time.monotonic()
            victim, best = self._least_useful(now)
            if best > 0 and now >= self._reap_after:
                if self._reap():
                    self.connections[id(connection)] = connection
                    return True
                self._reap_after = now + REAP_PAUSE_SECONDS
                victim, best = self._least_useful(now)  # the reap may have seen bytes from "silent" ones
            for _ in range(8):  # a victim that looks silent, idle or half-way may have sent bytes not read yet
                if victim is None or not (
                    victim.silent or victim.early or (victim.state == IDLE and not victim.served)
                ):
                    break
                waiting = waiting_bytes(victim.sock)
                if waiting is None:  # or be gone
                    victim.abort()
                    self.metrics.reaped.inc()
                    self.connections[id(connection)] = connection
                    return True
                if not waiting:
                    break
                if victim.silent:
                    victim.arrived(waiting)
                elif victim.early:  # the rest of a ClientHello that arrived in pieces?
                    if not whole_client_hello(victim.early + waiting):
                        break
                    victim.hello_whole = True
                else:  # its request is there, unread: progress
                    victim.since = now
                    self.progressed(victim)
                victim, best = self._least_useful(now)
            if victim is None:
                self.metrics.request_errors.inc(reason="too_many_connections")
                self.logger.warning("connection_refused", reason="every connection is busy", peer=connection.peer)
                return False
            self.metrics.evictions.inc(state=victim.describe(now))
            self.logger.debug("connection_evicted", state=victim.describe(now), peer=victim.peer)
            victim.abort()
        self.connections[id(connection)] = connection
        return True

    def _least_useful(self, now: float) -> tuple[_Connection | None, int]:
        victim, best = None, _NOT_EVICTABLE
        for candidate in self.connections.values():  # least recent progress first
            rank = candidate.eviction_rank(now)
            if rank < best:
                victim, best = candidate, rank
                if rank == 0:
                    break
        return victim, best

    def _reap(self) -> int:
        """Close the connections whose clients have already closed or reset them, unread by the loop so far,
        and note what the silent ones have sent meanwhile.

        A connect/close or ClientHello-then-reset flood leaves its sockets in the table until the loop reads
        their end; ranked among live connections, they would push out an honest handshake, and so would a
        connection that looks silent only because the loop has not read its ClientHello yet. Only connections
        that have not sent a request yet are looked at (one non-blocking MSG_PEEK each)."""
        reaped = 0
        for candidate in list(self.connections.values()):
            if candidate.state not in (HANDSHAKE, IDLE) or candidate.served:
                continue
            waiting = waiting_bytes(candidate.sock, PEEK_BYTES if candidate.silent else 1)
            if waiting is None:
                candidate.abort()
                reaped += 1
            elif waiting and candidate.silent:
                candidate.arrived(waiting)
        if reaped:
            self.metrics.reaped.inc(reaped)
        return reaped

    def progressed(self, connection: _Connection) -> None:
        key = id(connection)
        if self.connections.pop(key, None) is not None:
            self.connections[key] = connection

    def forget(self, connection: _Connection) -> None:
        self.connections.pop(id(connection), None)

    def _sweep(self) -> None:
        now = time.monotonic()
        try:
            for connection in list(self.connections.values()):
                if connection.deadline < now and connection.state != BUSY:
                    connection.expire()
        finally:
            assert self.loop is not None
            self._sweeper = self.loop.call_later(SWEEP_SECONDS, self._sweep)


PEEK_BYTES = 5 + (1 << 14)
"""A TLS record header and the largest record: enough to see a whole ClientHello."""


def waiting_bytes(sock: socket.socket, size: int = PEEK_BYTES) -> bytes | None:
    """What the client has sent and nobody has read yet (one MSG_PEEK, which consumes nothing), or None when the
    client has already closed (FIN, nothing unread) or reset (RST) the non-blocking socket."""
    try:
        return sock.recv(size, socket.MSG_PEEK) or None
    except (BlockingIOError, InterruptedError):
        return b""
    except OSError:
        return None


def whole_client_hello(data: bytes) -> bool:
    """`data` starts with a complete TLS handshake record (what a ClientHello arrives in)."""
    return len(data) >= 5 and data[0] == 0x16 and len(data) >= 5 + int.from_bytes(data[3:5], "big")


def client_hello_incomplete(data: bytes) -> bool:
    """`data` is the start of a TLS handshake record that has not all arrived (anything else is for OpenSSL to
    judge, and refuse)."""
    return data[:1] == b"\x16" and not whole_client_hello(data) and len(data) < PEEK_BYTES


class _Connection(asyncio.Protocol):
    """One client connection: TLS through memory BIOs, HTTP/1.1 requests one after another."""

    def __init__(self, server: ProviderHTTPServer, sock: socket.socket, address: Any, waiting: bytes = b""):
        self.server = server
        self.sock = sock
        self.watching = False
        """Registered for its first bytes, before it has a transport (ProviderHTTPServer._first_bytes)."""
        self.starting = False
        """Its transport is being made (ProviderHTTPServer._serve): the transport owns the socket from now."""
        self.early = b""
        """Bytes read before the transport existed (ProviderHTTPServer._first_bytes), fed at connection_made."""
        self.transport: asyncio.Transport | None = None
        self.tls: ServerSession | None = None
        self.buffer = b""
        self.pending: RequestHead | None = None
        self.body_start = 0
        self.opened = time.monotonic()
        self.since = self.opened
        """When the connection last entered its state (accept, handshake done, request started, answered)."""
        if server.tls is not None:
            self.state = HANDSHAKE
            self.deadline = self.opened + server.limits.handshake_timeout
        else:
            self.state = IDLE
            self.deadline = self.opened + server.limits.idle_timeout
        self.peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
        self.peer_eof = False
        self.silent = True
        """No byte received yet (bytes waiting unread count as received)."""
        self.served = 0
        """Responses sent."""
        self.hello_whole = False
        """A whole ClientHello arrived (seen unread, or answered by the server's handshake flight)."""
        if waiting:
            self.arrived(waiting)

    def arrived(self, waiting: bytes) -> None:
        """The client's first bytes are waiting, unread."""
        self.silent = False
        self.hello_whole = self.server.tls is not None and whole_client_hello(waiting)

    # ---------------------------------------------------------------- asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admitted at accept (ProviderHTTPServer._accept); the transport comes once the client has sent bytes."""
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport subclasses
        if self.state == CLOSED:  # evicted or expired while its transport was being made
            transport.abort()
            return
        if self.server.tls is not None:
            self.tls = self.server.tls.current().new_session()
        if self.early:  # before the transport starts reading: the bytes keep their order
            early, self.early = self.early, b""
            self.data_received(early)

    def data_received(self, data: bytes) -> None:
        if self.state == CLOSED:
            return
        self.silent = False
        if self.tls is None:
            self._feed(data)
            return
        tls = self.tls
        tls.feed(data)
        if self.state == HANDSHAKE and not self._handshake():
            return
        chunks = []
        try:
            while True:
                chunks.append(tls.read(65536))
                if not tls.has_unread():
                    break  # all received bytes are decrypted: another read would only raise SSLWantReadError
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            self.peer_eof = True
        except ssl.SSLError as exc:
            self._log_debug("tls_read_failed", exc)
            self.abort()
            return
        if chunks:
            self._feed(b"".join(chunks))
        # One write for whatever this flight produced (its answers, the end of the handshake, a key update's
        # reply): a second small write could wait for the client's ACK of the first.
        if self.state != CLOSED:
            self._flush_tls()
        if self.peer_eof and self.state != BUSY:
            self.close()

    def eof_received(self) -> bool:
        self.peer_eof = True
        return self.state == BUSY  # keep the transport open to send the answer being computed

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = CLOSED
        self.server.forget(self)

    def eviction_rank(self, now: float) -> int:
        """Who goes first when a new connection needs a slot (lower goes first); equal ranks go oldest first.

        0 idle after an answer (Gatekeeper never reuses it); 1 nothing received for SILENCE_GRACE; 2 handshake
        done (or a plain connection) but no request for PROGRESS_GRACE; 3 a ClientHello or request still
        arriving after PROGRESS_GRACE (trickling); 4 a part of a ClientHello, younger than PROGRESS_GRACE (a
        real client writes its ClientHello whole, at once: a part costs an attacker nothing); 5 nothing
        received yet, younger than SILENCE_GRACE (under load a real client's ClientHello may not be there, or
        not be read, yet); 6 other progress within PROGRESS_GRACE (a real client is there for a few
        milliseconds); 7 a handshake with a whole ClientHello (seen unread, or answered), or one completed
        within PROGRESS_GRACE, whose request is coming (a whole ClientHello costs an attacker the server's
        answer, and the handshake deadline still bounds it). Before a silent or idle connection is evicted,
        `admit` looks whether its bytes are already waiting unread. Busy connections (an answer being
        computed) are never evicted."""
        state = self.state
        if state in (BUSY, CLOSED):
            return _NOT_EVICTABLE
        if state == IDLE and self.served:
            return 0
        if self.silent:
            return 1 if now - self.opened >= SILENCE_GRACE else 5
        if state == HANDSHAKE and self.hello_whole:
            return 7
        if now - self.since < PROGRESS_GRACE:
            if state == HANDSHAKE:
                return 4  # a part of a ClientHello: a real client writes it whole, at once
            return 7 if self.tls is not None and state == IDLE else 6  # a handshake just completed: request coming
        return 2 if state == IDLE else 3

    def describe(self, now: float) -> str:
        names = (
            "idle_after_answer",
            "silent",
            "idle_before_request",
            "reading",
            "partial_hello",
            "young_silent",
            "young",
            "handshaking",
        )
        return names[self.eviction_rank(now)]

    # ---------------------------------------------------------------- TLS
    def _handshake(self) -> bool:
        assert self.tls is not None
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            if output := self.tls.take_output():
                assert self.transport is not None
                self.transport.write(output)
                if not self.hello_whole:
                    self.hello_whole = True
                    self.since = time.monotonic()
                    self.server.progressed(self)
            return False
        except (ssl.SSLError, ValueError) as exc:
            self._flush_tls()  # the alert tells the client why
            self.server.metrics.request_errors.inc(reason="tls_handshake")
            self.server.logger.info("tls_handshake_failed", peer=self.peer, error=str(exc)[:300])
            self.abort()
            return False
        self.state = IDLE  # what the handshake's end produced leaves with this flight's answer (data_received)
        self.since = time.monotonic()
        self.deadline = self.since + self.server.limits.idle_timeout
        self.server.progressed(self)
        return True

    def _flush_tls(self) -> None:
        assert self.tls is not None and self.transport is not None
        if output := self.tls.take_output():
            self.transport.write(output)

    def _write(self, data: bytes) -> None:
        """Plaintext goes out at once; with TLS it is encrypted into the session's output, which the caller
        flushes (`_flush_tls`, or `close` after its close_notify) so that one response is one write."""
        assert self.transport is not None
        if self.tls is None:
            self.transport.write(data)
            return
        try:
            self.tls.write(data)
        except ssl.SSLError as exc:
            self._log_debug("tls_write_failed", exc)
            self.abort()

    # ---------------------------------------------------------------- HTTP
    def _feed(self, data: bytes) -> None:
        self.buffer = self.buffer + data if self.buffer else data
        if self.state == BUSY:
            if len(self.buffer) > self.server.limits.max_body_bytes + MAX_HEADER_BYTES:
                self.abort()
            return
        self._process()

    def _process(self) -> None:
        """Answer every complete request in the buffer, in order; note when one is incomplete."""
        limits = self.server.limits
        while self.state in (IDLE, READING) and self.buffer:
            head = self.pending
            if head is None:
                if self.state == IDLE:
                    self.buffer = self.buffer.lstrip(b"\r\n")  # RFC 9112 2.2: empty lines before a request
                    if not self.buffer:
                        return
                    self.state = READING
                    self.since = time.monotonic()
                    self.deadline = self.since + limits.read_timeout
                    self.server.progressed(self)
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(self.buffer) > MAX_HEADER_BYTES:
                        self._refuse(HeadError(431, "http_431", f"request head exceeds {MAX_HEADER_BYTES} bytes"))
                    return
                if end > MAX_HEADER_BYTES:
                    self._refuse(HeadError(431, "http_431", f"request head exceeds {MAX_HEADER_BYTES} bytes"))
                    return
                parsed = parse_head(self.buffer[:end])
                if isinstance(parsed, HeadError):
                    self._refuse(parsed)
                    return
                head, self.pending, self.body_start = parsed, parsed, end + 4
            length = head.content_length or 0
            if head.method == "POST" and head.content_length is None:
                self._refuse(HeadError(411, "no_content_length", "Content-Length is required"))
                return
            if length > limits.max_body_bytes:
                self._refuse(
                    HeadError(
                        413, "body_too_large", f"request body of {length} bytes exceeds {limits.max_body_bytes} bytes"
                    )
                )
                return
            end = self.body_start + length
            if len(self.buffer) < end:
                return  # wait for the rest of the body (within read_timeout)
            body = self.buffer[self.body_start : end]
            self.buffer = self.buffer[end:]
            self.pending = None
            self._dispatch(head, body)

    def _dispatch(self, head: RequestHead, body: bytes) -> None:
        server = self.server
        path = head.path
        try:
            if path in PROBE_PATHS and not server.serve_probes:
                self._system_error(head, 404, "not_found", f"{path} is served on the health port only")
            elif head.method == "GET" and path in PROBE_PATHS:
                self._probe(head, path)
            elif head.method == "POST" and server.provider_handler is not None and path not in PROBE_PATHS:
                self._provider(head, body)
            elif head.method == "GET":
                self._system_error(head, 405, "method_not_allowed", "the provider endpoint accepts POST only", "POST")
            else:
                allow = "GET" if path in PROBE_PATHS else "POST"
                self._system_error(head, 405, "method_not_allowed", f"method {head.method} not allowed here", allow)
        except Exception as exc:  # a bug must not kill the connection without an answer
            server.logger.error("internal_error", error=f"{type(exc).__name__}: {str(exc)[:300]}", peer=self.peer)
            self._system_error(head, 500, "internal_error", "internal error in the provider", close=True)

    def _probe(self, head: RequestHead, path: str) -> None:
        server = self.server
        if path == "/healthz":
            self._send(head, 200, b"ok\n", "text/plain")
        elif path == "/readyz":
            if server.is_ready():
                self._send(head, 200, b"ok\n", "text/plain")
            else:
                self._send(head, 503, b"not ready: the first list of JobSets has not completed\n", "text/plain")
        else:
            self._send(head, 200, server.metrics.render().encode(), "text/plain; version=0.0.4")

    def _provider(self, head: RequestHead, body: bytes) -> None:
        started = time.perf_counter()
        server = self.server
        try:
            document = json.loads(body.decode())  # Gatekeeper sends UTF-8; str skips json's encoding sniffing
        except (ValueError, UnicodeDecodeError) as exc:
            self._system_error(head, 400, "malformed_json", f"request body is not valid JSON: {str(exc)[:200]}")
            return
        except RecursionError:
            self._system_error(head, 400, "malformed_json", "request body is nested too deeply to be a ProviderRequest")
            return
        handler = server.provider_handler
        assert handler is not None
        if server._answers_from_memory():
            answer = handler.answer_from_memory(document)
            if answer is not None:
                self._answered(head, answer, started)
                return
        # The source may call the Kubernetes API: answer on a thread, keep the loop serving.
        assert server.executor is not None and server.loop is not None
        self.state = BUSY
        loop = server.loop
        future: Future[Answer] = server.executor.submit(handler.answer, document)
        future.add_done_callback(lambda done: loop.call_soon_threadsafe(self._answered_later, head, done, started))

    def _answered_later(self, head: RequestHead, done: Future[Answer], started: float) -> None:
        if self.state == CLOSED:
            return
        self.state = READING  # leaves BUSY; _send moves on to IDLE or closes
        try:
            answer = done.result()
        except Exception as exc:
            self.server.logger.error("internal_error", error=f"{type(exc).__name__}: {str(exc)[:300]}", peer=self.peer)
            self._system_error(head, 500, "internal_error", "internal error in the provider", close=True)
            return
        self._answered(head, answer, started)
        if self.peer_eof:
            self.close()
        else:
            self._process()
            if self.tls is not None and self.state != CLOSED:
                self._flush_tls()

    def _answered(self, head: RequestHead, answer: Answer, started: float) -> None:
        metrics = self.server.metrics
        if answer.system_error:
            metrics.request_errors.inc(reason="bad_request_document")
        else:
            metrics.keys.inc(answer.keys - answer.key_errors, outcome="value")
            if answer.key_errors:
                metrics.keys.inc(answer.key_errors, outcome="error")
        self._send(head, 200, answer.body)
        elapsed = time.perf_counter() - started
        metrics.latency.observe(elapsed)

    # ---------------------------------------------------------------- responses
    def _system_error(
        self,
        head: RequestHead | None,
        status: int,
        reason: str,
        message: str,
        allow: str | None = None,
        close: bool = False,
    ) -> None:
        self.server.metrics.request_errors.inc(reason=reason)
        self.server.logger.info("request_rejected", status=status, reason=reason, message=message[:300], peer=self.peer)
        extra = f"Allow: {allow}\r\n" if allow else ""
        body = _json(provider_response([], system_error=message))
        self._send(head, status, body, extra=extra, close=close)

    def _refuse(self, error: HeadError) -> None:
        """A request that cannot be framed: answer, then close (the rest of the stream is unreadable)."""
        self._system_error(None, error.status, error.reason, error.message, close=True)

    def _send(
        self,
        head: RequestHead | None,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        extra: str = "",
        close: bool = False,
    ) -> None:
        if self.state == CLOSED:
            return
        now = time.monotonic()
        limits = self.server.limits
        close = close or head is None or not head.keep_alive or now - self.opened > limits.max_connection_age
        header = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n{extra}{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n"
        )
        self._write(header.encode("latin-1") + body)
        if self.state == CLOSED:
            return
        self.served += 1
        endpoint = head.path if head is not None and head.path in PROBE_PATHS else "provider"
        self.server.metrics.requests.inc(code=str(status), endpoint=endpoint)
        if close:
            self.close()  # the answer and the close_notify in one write
            return
        self.state = IDLE  # the caller (data_received, _answered_later) flushes the TLS output once
        self.since = now
        self.deadline = now + limits.idle_timeout
        self.server.progressed(self)

    # ---------------------------------------------------------------- closing
    def expire(self) -> None:
        """A deadline passed: handshake too slow, request incomplete in time, or idle too long."""
        state = self.state
        if state == READING:
            self.server.metrics.request_errors.inc(reason="read_timeout")
            self.server.logger.info("request_timed_out", peer=self.peer, received_bytes=len(self.buffer))
            self.pending = None
            body = _json(provider_response([], system_error="request not received in time"))
            self._send(None, 408, body, close=True)
        elif state == HANDSHAKE:
            self.server.metrics.request_errors.inc(reason="handshake_timeout")
            self.server.logger.info("tls_handshake_timed_out", peer=self.peer)
            self.abort()
        else:
            self.close()

    def close(self) -> None:
        """Graceful: TLS close_notify, flush what was written, then FIN."""
        if self.state == CLOSED:
            return
        transport = self.transport
        if transport is None:
            self.abort()
            return
        self.state = CLOSED
        self.server.forget(self)
        if self.tls is not None:
            with contextlib.suppress(ssl.SSLError, ValueError):
                self.tls.unwrap()
            with contextlib.suppress(Exception):
                self._flush_tls()
        if transport.get_write_buffer_size() > 1 << 20:  # a client that does not read: do not wait for it
            transport.abort()
        else:
            transport.close()

    def abort(self) -> None:
        self.state = CLOSED
        self.server.forget(self)
        if self.transport is not None:
            self.transport.abort()
        elif not self.starting and self.sock.fileno() != -1:  # no transport yet: the socket is ours
            if self.watching and self.server.loop is not None:
                self.server.loop.remove_reader(self.sock.fileno())
                self.watching = False
            self.sock.close()

    def _log_debug(self, event: str, exc: BaseException) -> None:
        self.server.logger.debug(event, peer=self.peer, error=str(exc)[:200])


class ServerThread:
    """Runs several ProviderHTTPServers on one event loop in a daemon thread."""

    def __init__(self, servers: list[ProviderHTTPServer], loop_factory: Callable[[], asyncio.AbstractEventLoop]):
        self.servers = servers
        self._loop_factory = loop_factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.executor = ThreadPoolExecutor(BLOCKING_WORKERS, thread_name_prefix="provider-lookup")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="provider-http", daemon=True)
        self._thread.start()
        self._started.wait(30)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        loop = self._loop = self._loop_factory()
        asyncio.set_event_loop(loop)
        try:
            for server in self.servers:
                loop.run_until_complete(server.start(loop, self.executor))
        except BaseException as exc:
            self._error = exc
            self._started.set()
            return
        self._started.set()
        try:
            loop.run_forever()
        finally:
            for server in self.servers:
                loop.run_until_complete(server.stop())
            loop.close()

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)
        for server in self.servers:
            with contextlib.suppress(OSError):
                server.socket.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
