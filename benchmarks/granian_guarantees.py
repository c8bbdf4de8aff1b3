"""Which of the provider's connection guarantees granian keeps, checked against a running granian.

granian (benchmarks/granian_provider.py, WSGI, one worker, the benchmark's certificates, mTLS, header read
timeout = the provider's 1 s idle timeout) is probed for each guarantee tests/provider checks on our server:
TLS 1.3 only, mTLS, the handshake deadline, the idle and read deadlines, a request that is still trickling,
a cap on open connections, the 400 on duplicate Content-Length, JSON nested 50k deep, certificate reload.
The same probe runs first against the provider itself (`trainer-policy provider serve --objects`), the
control that shows each check can pass. Prints and writes one line per guarantee and server
(benchmarks/results/granian_guarantees.json).

    python -m benchmarks.granian_guarantees
"""

from __future__ import annotations

import os
import socket
import ssl
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_result
from benchmarks.provider_servers import (
    LOOPBACK,
    free_port,
    granian_command,
    make_pki,
    python_command,
    start_server,
    write_data,
)
from kubeflow_trainer_policy_provider.certs import issue, make_ca
from kubeflow_trainer_policy_provider.http_server import (
    HANDSHAKE_TIMEOUT_SECONDS,
    IDLE_TIMEOUT_SECONDS,
    MAX_CONNECTIONS,
    READ_TIMEOUT_SECONDS,
)

BODY = (
    b'{"apiVersion":"externaldata.gatekeeper.sh/v1beta1","kind":"ProviderRequest","request":{"keys":["bench-0/job-0"]}}'
)


def client_context(pki: Path, *, cert: bool = True, tls12: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if tls12:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    if cert:
        context.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
    return context


def seconds_until_closed(sock: socket.socket, limit: float) -> float | None:
    """Seconds until the server closes `sock` (EOF or reset), None if still open after `limit`."""
    sock.settimeout(0.2)
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            if sock.recv(65536) == b"":
                return round(time.monotonic() - started, 2)
        except TimeoutError:
            continue
        except (OSError, ssl.SSLError):
            return round(time.monotonic() - started, 2)
    return None


def is_open(sock: socket.socket) -> bool:
    """The server has not closed `sock` (nothing to read yet, no EOF, no reset)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def request(port: int, pki: Path, raw: bytes, **client: Any) -> str:
    """The status line the server answers `raw` with, or why there was none."""
    try:
        with (
            socket.create_connection((LOOPBACK, port), timeout=5) as plain,
            client_context(pki, **client).wrap_socket(plain, server_hostname=LOOPBACK) as tls,
        ):
            tls.sendall(raw)
            answer = b""
            while b"\r\n" not in answer:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                answer += chunk
            return answer.split(b"\r\n", 1)[0].decode() or "closed without an answer"
    except (OSError, ssl.SSLError) as exc:
        return f"refused: {type(exc).__name__}: {str(exc)[:120]}"


def post(body: bytes, extra: bytes = b"") -> bytes:
    return b"POST / HTTP/1.1\r\nHost: p\r\nContent-Length: %d\r\n%s\r\n" % (len(body), extra) + body


def served_certificate(port: int, pki: Path) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
    with (
        socket.create_connection((LOOPBACK, port), timeout=5) as plain,
        context.wrap_socket(plain, server_hostname=LOOPBACK) as tls,
    ):
        return tls.getpeercert(binary_form=True) or b""


def probe(port: int, pki: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def note(name: str, kept: bool, seen: Any) -> None:
        out[name] = {"kept": kept, "seen": seen}
        print(f"  {'kept  ' if kept else 'BROKEN'} {name}: {seen}", flush=True)

    seen = request(port, pki, post(BODY), tls12=True)
    note("TLS 1.3 only (a TLS 1.2 client is refused)", seen.startswith("refused"), seen)
    seen = request(port, pki, post(BODY), cert=False)
    note("mTLS (a client without certificate gets no answer)", not seen.startswith("HTTP/1.1 200"), seen)
    with socket.create_connection((LOOPBACK, port)) as silent:
        closed = seconds_until_closed(silent, HANDSHAKE_TIMEOUT_SECONDS + 3)
    note(
        f"handshake deadline ({HANDSHAKE_TIMEOUT_SECONDS:g} s): a silent TCP connection is closed",
        closed is not None,
        closed,
    )
    with client_context(pki).wrap_socket(socket.create_connection((LOOPBACK, port)), server_hostname=LOOPBACK) as idle:
        closed = seconds_until_closed(idle, IDLE_TIMEOUT_SECONDS + 3)
    note(f"idle deadline ({IDLE_TIMEOUT_SECONDS:g} s) after the handshake", closed is not None, closed)
    with client_context(pki).wrap_socket(socket.create_connection((LOOPBACK, port)), server_hostname=LOOPBACK) as slow:
        slow.sendall(post(BODY)[: -len(BODY) + 5])  # the head and 5 bytes of the body, then nothing
        closed = seconds_until_closed(slow, READ_TIMEOUT_SECONDS + 3)
    note(f"read deadline ({READ_TIMEOUT_SECONDS:g} s): a body that stops arriving", closed is not None, closed)
    seen = request(port, pki, post(BODY, b"Content-Length: %d\r\n" % len(BODY)))
    note("duplicate Content-Length gets 400", seen.startswith("HTTP/1.1 400"), seen)
    deep = b"[" * 50_000 + b"]" * 50_000
    seen = request(port, pki, post(deep))
    note("JSON nested 50k deep gets an answer (systemError)", seen.startswith("HTTP/1.1 4"), seen)
    idle = [socket.create_connection((LOOPBACK, port)) for _ in range(MAX_CONNECTIONS + 100)]
    try:
        time.sleep(0.5)
        seen = request(port, pki, post(BODY))
        still_open = sum(1 for sock in idle if is_open(sock))
    finally:
        for sock in idle:
            sock.close()
    note(
        f"cap of {MAX_CONNECTIONS} open connections (silent ones evicted), a real client still served",
        still_open <= MAX_CONNECTIONS and seen.startswith("HTTP/1.1 200"),
        f"{still_open} of {len(idle)} silent connections kept open; real request: {seen}",
    )
    before = served_certificate(port, pki)
    new_ca = make_ca("rotated-ca")
    issue(new_ca, "provider", [LOOPBACK]).write(pki / "tls.crt.new", pki / "tls.key.new")
    os.replace(pki / "tls.key.new", pki / "tls.key")
    os.replace(pki / "tls.crt.new", pki / "tls.crt")
    time.sleep(3)
    after = served_certificate(port, pki)
    note(
        "certificate reload (files replaced, new connections get the new one within 3 s)",
        after != before,
        after != before,
    )
    return out


def main(argv: list[str] | None = None) -> None:
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for name in ("python", "granian-wsgi"):
        work = Path(tempfile.mkdtemp(prefix="ktp-granian-probe-"))
        pki = make_pki(work)  # a fresh PKI per server: the reload check replaces the serving pair
        data, _ = write_data(work, 100)
        port = free_port()
        if name == "python":
            command = python_command(data, port, pki)
        else:
            command = granian_command("wsgi", port, pki)
            command[-1:-1] = ["--http1-header-read-timeout", str(int(IDLE_TIMEOUT_SECONDS * 1000))]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PROVIDER_BENCH_DATA": str(data)}
        print(f"== {name}", flush=True)
        server = start_server(name, command, port, pki, env)
        try:
            results[name] = probe(port, pki)
        finally:
            server.stop()
    from importlib.metadata import version

    path = write_result("granian_guarantees", {"granian": version("granian"), "guarantees": results})
    print(f"-> {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
