"""How an answer leaves the provider's socket, checked in ways the machine's speed cannot change (issue 27).

Gatekeeper's client opens a new TLS 1.3 connection for every lookup. A server that writes a second small
segment while its first one is still unacknowledged (a session ticket after the handshake, then the answer;
or the answer, then its close_notify) has that second segment held back by Nagle's algorithm until the
client's delayed ACK, about 40 ms later, unless TCP_NODELAY is set on the connection: that made most
lookups 42 ms slower. So: no session ticket (Gatekeeper never resumes), TCP_NODELAY on every accepted
connection as Go's server sets it, and everything the server sends after the handshake arrives in exactly
one TCP segment (the kernel's count of data segments received, TCP_INFO tcpi_data_segs_in).
"""

from __future__ import annotations

import json
import socket
import ssl
import struct

import pytest

from kubeflow_trainer_policy_provider.sources import StaticJobSetSource
from tests.provider.conftest import Pki, Running, StartProvider
from tests.provider.helpers import client_context, provider_request, wait_until

JOBSETS = [
    {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "job1", "namespace": "team-a"},
        "status": {"replicatedJobsStatus": [{"name": "node", "active": 1}]},
    }
]
TCP_INFO_BYTES = 232
DATA_SEGS_IN = 152
"""Offset of tcpi_data_segs_in in Linux's struct tcp_info (linux/tcp.h, since Linux 4.6)."""


def data_segments_received(sock: socket.socket) -> int:
    return int(
        struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES), DATA_SEGS_IN)[0]
    )


def request(connection: str) -> bytes:
    """Gatekeeper's request (Go's net/http client), with a Connection header when one is given."""
    body = json.dumps(provider_request(["team-a/job1"])).encode()
    extra = f"Connection: {connection}\r\n" if connection else ""
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: {len(body)}\r\n"
        f"Content-Type: application/json\r\nAccept-Encoding: gzip\r\n{extra}\r\n"
    )
    return head.encode() + body


def read_answer(tls: ssl.SSLSocket, until_eof: bool) -> bytes:
    data = b""
    while True:
        chunk = tls.recv(65536)
        data += chunk
        if not chunk:
            return data
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep and not until_eof:
            length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
            if len(body) >= length:
                return data


@pytest.mark.parametrize("connection", ["", "close"], ids=["keep-alive (Gatekeeper)", "connection-close"])
def test_after_the_handshake_the_answer_is_the_one_segment_the_client_receives(
    start_provider: StartProvider, pki: Pki, connection: str
) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), mtls=True)
    context = client_context(str(pki.ca), cert=(str(pki.client_cert), str(pki.client_key)))  # accepts tickets
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
    ) as tls:
        after_handshake = data_segments_received(tls)  # the server's flight is in: the client has sent Finished
        tls.sendall(request(connection))
        answer = read_answer(tls, until_eof=connection == "close")
        segments = data_segments_received(tls) - after_handshake
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["response"]["items"][0]["key"] == "team-a/job1"
        assert tls.session is not None and not tls.session.has_ticket, "the server sent a TLS session ticket"
        # a ticket, or an answer and its close_notify written apart, would be a second segment
        assert segments == 1, f"{segments} data segments after the handshake (the answer alone is one)"


def test_every_accepted_connection_has_tcp_nodelay(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(StaticJobSetSource(JOBSETS), mtls=True, health_port=0)
    for port in (running.server.port, running.server.health_port):
        assert port is not None
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            wait_until(lambda port=port: bool(accepted_sockets(running, port)), timeout=5)
            for sock in accepted_sockets(running, port):
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1, f"port {port}"


def accepted_sockets(running: Running, port: int) -> list[socket.socket]:
    """The server side of the connections open on `port` (from the server's connection table)."""
    servers = [s for s in running.server._servers if s.server_address[1] == port]  # type: ignore[attr-defined]
    return [c.sock for s in servers for c in s.connections.values()]
