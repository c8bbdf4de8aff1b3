"""The provider under Gatekeeper's connection pattern and under connection abuse (issue 14 item 1).

Gatekeeper's client (frameworks externaldata/request.go) opens a new TLS 1.3 connection, with its
client certificate, for every lookup, sends one POST, reads the answer and leaves the connection
open, never reusing or closing it. Attackers (or broken clients) hold connections idle, never finish
a handshake, or send a request one byte at a time. None of that may make a real lookup or a probe
fail or wait. Everything here runs on 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubeflow_trainer_policy_provider.http_server import Limits
from kubeflow_trainer_policy_provider.sources import StaticJobSetSource
from tests.provider.conftest import Pki, StartProvider
from tests.provider.helpers import client_context, provider_request, wait_until

JOBSETS = [
    {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": f"job{i}", "namespace": "team-a"},
        "status": {"replicatedJobsStatus": [{"name": "node", "active": i % 2}]},
    }
    for i in range(100)
]
LOOKUP_DEADLINE = 2.0
"""Seconds: the generated Provider object's spec.timeout; Gatekeeper fails a slower lookup."""


def post_bytes(keys: list[str]) -> bytes:
    body = json.dumps(provider_request(keys)).encode()
    return b"POST / HTTP/1.1\r\nHost: provider\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} bytes")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-body")
        body += chunk
    return int(head.split(b" ")[1]), body


@dataclass
class Outcomes:
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, started: float, error: str | None) -> None:
        elapsed = time.monotonic() - started
        with self.lock:
            self.slowest = max(self.slowest, elapsed)
            if error is None and elapsed > LOOKUP_DEADLINE:
                error = f"took {elapsed:.2f}s"
            if error is None:
                self.ok += 1
            else:
                self.failures.append(error)


def gatekeeper_lookup(port: int, context: ssl.SSLContext, key: str, outcomes: Outcomes, kept: list[socket.socket]):
    """One lookup as Gatekeeper makes it: new TCP + TLS 1.3 (client cert), one POST, never closed."""
    started = time.monotonic()
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=LOOKUP_DEADLINE + 1)
        tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
        kept.append(tls)  # Gatekeeper leaves the connection open; so do we, until the test ends
        tls.sendall(post_bytes([key]))
        status, body = read_response(tls)
        item = json.loads(body)["response"]["items"][0]
        index = int(key.rsplit("job", 1)[1])
        expected = {"found": True, "activeReplicatedJobs": ["node"] if index % 2 else []}
        error = None if status == 200 and item.get("value") == expected else f"HTTP {status}: {body[:200]!r}"
    except (OSError, ValueError, KeyError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    outcomes.record(started, error)


def run_gatekeeper_client(
    port: int, ca: str, cert: tuple[str, str], rate: int, seconds: float, out: Any, release: Any
) -> None:
    """In a child process, as Gatekeeper is one: lookups at `rate`/s, open loop, each on a new mTLS
    connection that is never closed until `release` is set (after the parent has checked the server)."""
    context = client_context(ca, cert=cert)
    outcomes, kept = Outcomes(), []
    with ThreadPoolExecutor(32) as pool:
        start = time.monotonic()
        for n in range(int(rate * seconds)):  # one lookup every 1/rate s, whatever the answers do
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(gatekeeper_lookup, port, context, f"team-a/job{n % 100}", outcomes, kept)
    out.put((outcomes.ok, outcomes.failures, outcomes.slowest, len(kept)))
    release.wait(30)
    for sock in kept:
        sock.close()


def test_gatekeeper_pattern_200_lookups_per_second_for_10_seconds(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), mtls=True)  # default limits: 256 connections
    rate, seconds = 200, 10.0
    context = multiprocessing.get_context("spawn")
    queue, release = context.Queue(), context.Event()
    cert = (str(pki.client_cert), str(pki.client_key))
    child = context.Process(
        target=run_gatekeeper_client,
        args=(running.server.port, str(pki.ca), cert, rate, seconds, queue, release),
        daemon=True,
    )
    child.start()
    try:
        ok, failures, slowest, kept = queue.get(timeout=seconds + 60)
        assert failures == [], f"{len(failures)} failed, e.g. {failures[:3]}; slowest {slowest:.2f}s"
        assert ok == int(rate * seconds)
        # 2,000 connections, never closed by the client, went through 256 slots: the server closed them itself
        assert kept == ok > running.server.config.limits.max_connections
        wait_until(lambda: _open_connections(running) == 0, timeout=5)
    finally:
        release.set()
        child.join(30)
        if child.is_alive():
            child.kill()


def _open_connections(running: object) -> int:
    return sum(len(server.connections) for server in running.server._servers)  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------- abuse
@dataclass
class Abuser:
    """Keeps one hostile connection open against `port`, reopening it 0.3 s after the server closes it
    (an attacker holding sockets, not a flood: no cap survives a client reconnecting without pause)."""

    port: int
    behaviour: Callable[[socket.socket, threading.Event], None]
    tls: ssl.SSLContext | None = None
    opened: int = 0

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
                if self.tls is not None:
                    sock = self.tls.wrap_socket(sock, server_hostname="127.0.0.1")
                self.opened += 1
                with sock:
                    self.behaviour(sock, stop)
            except OSError:
                pass
            stop.wait(0.3)


def hold_silent(sock: socket.socket, stop: threading.Event) -> None:
    """Send nothing (before the TLS handshake on a raw socket, or after it) until closed."""
    while not stop.is_set():
        try:
            if sock.recv(1) == b"":
                return
        except TimeoutError:
            continue


def trickle(request: bytes) -> Callable[[socket.socket, threading.Event], None]:
    def behaviour(sock: socket.socket, stop: threading.Event) -> None:
        for byte in request:
            if stop.wait(0.1):
                return
            sock.sendall(bytes([byte]))
        hold_silent(sock, stop)

    return behaviour


SLOW_POST = b"POST / HTTP/1.1\r\nHost: provider\r\nContent-Length: 60\r\n\r\n" + b"{" * 60
SLOW_PROBE = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


def run_abusers(port: int, health: int, cap: int, ca: str, cert: tuple[str, str], seconds: float, out: object) -> None:
    """In a child process (so the abusers' threads do not compete with the server for the GIL): 2x `cap`
    hostile connections on each port for `seconds`, each reopened as soon as the server closes it."""
    client = client_context(ca, cert=cert)
    abusers = (
        # TLS port: raw sockets that never start TLS, TLS sockets that never send, tricklers
        [Abuser(port, hold_silent) for _ in range(cap // 2)]
        + [Abuser(port, hold_silent, client) for _ in range(cap)]
        + [Abuser(port, trickle(SLOW_POST), client) for _ in range(cap // 2)]
        # plain health port: silent sockets and trickled probes
        + [Abuser(health, hold_silent) for _ in range(cap)]
        + [Abuser(health, trickle(SLOW_PROBE)) for _ in range(cap)]
    )
    stop = threading.Event()
    threads = [threading.Thread(target=a.run, args=(stop,), daemon=True) for a in abusers]
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join(5)
    out.put(sum(a.opened for a in abusers))  # type: ignore[attr-defined]


def test_idle_and_trickling_connections_never_lock_out_lookups_or_probes(
    start_provider: StartProvider, pki: Pki
) -> None:
    cap = 16
    running = start_provider(StaticJobSetSource(JOBSETS), mtls=True, health_port=0, limits=Limits(max_connections=cap))
    port, health = running.server.port, running.server.health_port
    assert health is not None
    cert = (str(pki.client_cert), str(pki.client_key))
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=run_abusers, args=(port, health, cap, str(pki.ca), cert, 8.0, queue), daemon=True)
    child.start()
    results = context.Queue()
    real = context.Process(target=run_real_clients, args=(port, health, str(pki.ca), cert, 5.0, results), daemon=True)
    try:
        wait_until(lambda: running.metrics.evictions.total() > 0, timeout=10)  # the abusers filled every slot
        real.start()  # Gatekeeper and the kubelet are other processes: no GIL shared with the server
        lookups, probes = results.get(timeout=30)
        opened = queue.get(timeout=20)
    finally:
        for process in (child, real):
            process.join(20)
            if process.is_alive():
                process.kill()
    evicted = running.metrics.evictions
    failures = (lookups.failures[:3], probes.failures[:3], evicted.render())
    assert lookups.failures == [] and probes.failures == [], failures
    assert lookups.ok >= 20 and probes.ok >= 20
    assert lookups.slowest < 1.0 and probes.slowest < 1.0, (lookups.slowest, probes.slowest)
    assert opened > 2 * 2 * cap  # the abusers held 2x the cap on each port, and were evicted and came back
    assert evicted.value(state="silent") > 0 and evicted.value(state="idle_before_request") > 0


def run_real_clients(port: int, health: int, ca: str, cert: tuple[str, str], seconds: float, out: Any) -> None:
    """Gatekeeper's lookups and the kubelet's probes, in a process of their own; puts (lookups, probes)."""
    client = client_context(ca, cert=cert)
    lookups, probes = Outcomes(), Outcomes()
    kept: list[socket.socket] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        gatekeeper_lookup(port, client, "team-a/job7", lookups, kept)
        probe(health, probes)
        time.sleep(0.05)
    for sock in kept:
        sock.close()
    out.put(
        (
            Outcomes(lookups.ok, lookups.failures, lookups.slowest, None),  # type: ignore[arg-type]
            Outcomes(probes.ok, probes.failures, probes.slowest, None),  # type: ignore[arg-type]
        )
    )


def probe(port: int, outcomes: Outcomes) -> None:
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=LOOKUP_DEADLINE) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            status, body = read_response(sock)
        error = None if (status, body) == (200, b"ok\n") else f"HTTP {status} {body[:100]!r}"
    except OSError as exc:
        error = f"{type(exc).__name__}: {exc}"
    outcomes.record(started, error)


def test_a_connection_left_idle_after_its_answer_is_closed_by_the_server(
    start_provider: StartProvider, pki: Pki
) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), limits=Limits(idle_timeout=0.5))
    with contextlib.closing(
        client_context(str(pki.ca)).wrap_socket(
            socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
        )
    ) as tls:
        tls.sendall(post_bytes(["team-a/job1"]))
        assert read_response(tls)[0] == 200
        answered = time.monotonic()
        assert tls.recv(1) == b""  # closed by the server (TLS close_notify, then FIN) ...
        assert time.monotonic() - answered < 0.5 + 0.5  # ... within the idle timeout and one sweep


def test_a_trickled_request_is_cut_off_at_the_read_timeout(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), limits=Limits(read_timeout=0.6, idle_timeout=5))
    with contextlib.closing(
        client_context(str(pki.ca)).wrap_socket(
            socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
        )
    ) as tls:
        started = time.monotonic()
        request = post_bytes(["team-a/job1"])
        with contextlib.suppress(OSError):
            for byte in request:  # one byte every 50 ms: each byte is progress, the deadline still holds
                tls.sendall(bytes([byte]))
                time.sleep(0.05)
        status, body = read_response(tls)
        assert status == 408 and "not received in time" in json.loads(body)["response"]["systemError"]
        assert time.monotonic() - started < 0.6 + 0.5
    assert running.metrics.request_errors.value(reason="read_timeout") == 1


def test_an_old_keep_alive_connection_is_told_to_close(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), limits=Limits(max_connection_age=0.3))
    with contextlib.closing(
        client_context(str(pki.ca)).wrap_socket(
            socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
        )
    ) as tls:
        tls.sendall(post_bytes(["team-a/job1"]))
        assert read_response(tls)[0] == 200
        time.sleep(0.4)
        tls.sendall(post_bytes(["team-a/job1"]))
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and b"\r\nConnection: close\r\n" in data


def test_a_client_close_notify_ends_the_connection_and_the_server_keeps_serving(
    start_provider: StartProvider, pki: Pki
) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), limits=Limits(idle_timeout=30))
    raw = socket.create_connection(("127.0.0.1", running.server.port), timeout=5)
    tls = client_context(str(pki.ca)).wrap_socket(raw, server_hostname="127.0.0.1")
    tls.sendall(post_bytes(["team-a/job1"]))
    assert read_response(tls)[0] == 200
    plain = tls.unwrap()  # TLS close_notify (answered by the server's), TCP stays open
    wait_until(lambda: _open_connections(running) == 0, timeout=2)
    assert plain.recv(1) == b""  # then the server closed the TCP connection
    plain.close()
    outcomes = Outcomes()
    gatekeeper_lookup(running.server.port, client_context(str(pki.ca)), "team-a/job3", outcomes, [])
    assert outcomes.ok == 1, outcomes.failures
