"""Honest lookups survive unauthenticated floods (issue 27 item 3): real TLS, every party its own process.

A flood of TCP connections that are closed at once (connect/close), or that send part of a ClientHello and
then reset, used to fill the server's connection table faster than its event loop read their ends; ranked
among live connections, such a dead socket pushed out a just-accepted honest handshake (15-27% of honest
lookups failed with a connection reset). Now a connection already closed or reset is dropped at accept, a
connection gets a transport and a TLS session only once its ClientHello is whole, the dead ones are closed
before anything live is evicted, and a handshake with a whole ClientHello is evicted last. Gatekeeper (an
open loop of lookups, each a new mTLS connection left open) and the flood (4 threads) each run in a process
of their own.
"""

from __future__ import annotations

import multiprocessing
import socket
import ssl
import struct
import threading
import time
from typing import Any

import pytest

from kubeflow_trainer_policy_provider.http_server import Limits
from kubeflow_trainer_policy_provider.sources import StaticJobSetSource
from tests.provider.conftest import Pki, StartProvider
from tests.provider.test_connection_abuse import JOBSETS, run_gatekeeper_client

FLOOD_RATE = 1900
"""Connections per second, all threads together: what 4 threads of connect/close reached in the report."""
FLOOD_THREADS = 4
HELLO_BYTES = 100


def client_hello() -> bytes:
    """The first flight of a TLS 1.3 client (Python's ssl), taken from its memory buffer."""
    context = ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="provider")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:  # waits for the server's answer: the ClientHello is written
        return outgoing.read()
    raise AssertionError("a TLS client finished its handshake without a server")


def flood(port: int, mode: str, seconds: float, out: Any) -> None:
    """In a process of its own: FLOOD_THREADS threads open connections at FLOOD_RATE/s in all for `seconds`;
    `connect` closes each at once (FIN), `hello` sends HELLO_BYTES of a ClientHello, then resets (RST)."""
    hello = client_hello()[:HELLO_BYTES]
    linger = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST
    opened = [0] * FLOOD_THREADS
    interval = FLOOD_THREADS / FLOOD_RATE
    start = time.monotonic()

    def worker(index: int) -> None:
        due = start + index * interval / FLOOD_THREADS
        while due < start + seconds:
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            due += interval
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
            except OSError:
                continue
            opened[index] += 1
            if mode == "hello":
                sock.sendall(hello)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            sock.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(FLOOD_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    out.put(sum(opened) / (time.monotonic() - start))


def lookups_under_flood(
    start_provider: StartProvider, pki: Pki, mode: str, limits: Limits, rate: int, seconds: float
) -> tuple[Any, float]:
    """Gatekeeper's open loop at `rate`/s while the flood runs; returns the provider and the flood's rate."""
    running = start_provider(StaticJobSetSource(JOBSETS), mtls=True, limits=limits)
    context = multiprocessing.get_context("spawn")
    flood_out, lookups_out, release = context.Queue(), context.Queue(), context.Event()
    flooder = context.Process(target=flood, args=(running.server.port, mode, seconds + 1.0, flood_out), daemon=True)
    cert = (str(pki.client_cert), str(pki.client_key))
    gatekeeper = context.Process(
        target=run_gatekeeper_client,
        args=(running.server.port, str(pki.ca), cert, rate, seconds, lookups_out, release),
        daemon=True,
    )
    flooder.start()
    time.sleep(0.5)  # the flood is on before the first lookup
    gatekeeper.start()
    try:
        ok, failures, slowest, _ = lookups_out.get(timeout=seconds + 60)
        flood_rate = flood_out.get(timeout=60)
    finally:
        release.set()
        for process in (gatekeeper, flooder):
            process.join(30)
            if process.is_alive():
                process.kill()
    evicted = running.metrics.evictions.render()
    assert failures == [], f"{len(failures)} of {ok + len(failures)} lookups failed, e.g. {failures[:3]}; {evicted}"
    assert ok == int(rate * seconds), (ok, slowest)
    return running, flood_rate


@pytest.mark.parametrize("mode", ["connect", "hello"])
def test_no_honest_lookup_fails_under_a_flood_at_the_default_limits(
    start_provider: StartProvider, pki: Pki, mode: str
) -> None:
    _, flood_rate = lookups_under_flood(start_provider, pki, mode, Limits(), rate=50, seconds=8.0)
    assert flood_rate > FLOOD_RATE * 0.6, f"the flood reached only {flood_rate:.0f} connections/s"


@pytest.mark.parametrize("mode", ["connect", "hello"])
def test_a_full_connection_table_closes_the_flood_s_dead_sockets_not_honest_handshakes(
    start_provider: StartProvider, pki: Pki, mode: str
) -> None:
    # 16 slots: the flood keeps the table full, so every honest connection is admitted at the cap
    running, flood_rate = lookups_under_flood(start_provider, pki, mode, Limits(max_connections=16), 20, 6.0)
    assert flood_rate > FLOOD_RATE * 0.6, f"the flood reached only {flood_rate:.0f} connections/s"
    assert running.metrics.reaped.total() > 0  # the table was full, and the flood's sockets made the room
