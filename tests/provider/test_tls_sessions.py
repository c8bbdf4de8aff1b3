"""The provider's TLS sessions (provider.tls), without sockets.

A stdlib `ssl` client talks to a server session through memory buffers, so every step (handshake, request,
answer, close, refusal) is checked on its own.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from kubeflow_trainer_policy_provider.tls import ServerContext, ServerSession, TLSFiles
from tests.provider.conftest import Pki
from tests.provider.helpers import client_context

REQUEST = b"POST / HTTP/1.1\r\nHost: provider\r\nContent-Length: 2\r\n\r\n{}"


class Client:
    """A stdlib TLS client over memory buffers, wired to one server session."""

    def __init__(self, server: ServerSession, context: ssl.SSLContext) -> None:
        self.server = server
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="127.0.0.1")

    def pump(self) -> None:
        """Client bytes to the server, the server's handshake step, server bytes back."""
        self.server.feed(self.outgoing.read())
        try:
            self.server.do_handshake()
        except ssl.SSLWantReadError:
            pass
        finally:
            self.incoming.write(self.server.take_output())

    def handshake(self) -> None:
        for _ in range(4):
            try:
                self.tls.do_handshake()
            except ssl.SSLWantReadError:
                self.pump()
                continue
            self.pump()  # TLS 1.3: the client's Finished (and certificate) reach the server after its handshake
            return
        raise AssertionError("the handshake did not finish")

    def send(self, data: bytes) -> None:
        self.tls.write(data)
        self.server.feed(self.outgoing.read())

    def receive(self) -> bytes:
        self.incoming.write(self.server.take_output())
        return self.tls.read(65536)


def serving_files(pki: Pki, mtls: bool) -> TLSFiles:
    return TLSFiles(str(pki.cert), str(pki.key), str(pki.client_ca) if mtls else None)


def test_a_client_with_its_certificate_gets_an_answer(pki: Pki) -> None:
    server = ServerContext(serving_files(pki, mtls=True)).new_session()
    client = Client(server, client_context(str(pki.ca), cert=(str(pki.client_cert), str(pki.client_key))))
    client.handshake()
    assert client.tls.version() == "TLSv1.3"
    server.do_handshake()  # finished: no exception
    client.send(REQUEST)
    assert server.has_unread()
    assert server.read(65536) == REQUEST
    assert not server.has_unread()
    with pytest.raises(ssl.SSLWantReadError):
        server.read(65536)
    server.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    assert client.receive().endswith(b"{}")
    with pytest.raises(ssl.SSLWantReadError):
        client.tls.unwrap()  # sends close_notify, then waits for the server's
    server.feed(client.outgoing.read())
    with pytest.raises(ssl.SSLZeroReturnError):
        server.read(65536)
    server.unwrap()
    client.incoming.write(server.take_output())
    client.tls.unwrap()  # the server's close_notify arrived


@pytest.mark.parametrize(
    ("certificate", "expected"),
    [
        (None, "peer did not return a certificate"),
        ("rogue", "certificate verify failed"),
    ],
)
def test_mtls_refuses_a_client_without_a_certificate_from_the_client_ca(
    pki: Pki, certificate: str | None, expected: str
) -> None:
    context = ServerContext(serving_files(pki, mtls=True))
    cert = (str(pki.rogue_cert), str(pki.rogue_key)) if certificate else None
    client = Client(context.new_session(), client_context(str(pki.ca), cert=cert))
    with pytest.raises(ssl.SSLError) as refused:
        client.handshake()
        client.server.do_handshake()
    assert expected in str(refused.value).lower()
    # a refusal leaves nothing behind for the next connection on this thread (OpenSSL's error queue)
    good = Client(context.new_session(), client_context(str(pki.ca), cert=(str(pki.client_cert), str(pki.client_key))))
    good.handshake()
    good.server.do_handshake()


def test_tls12_is_refused(pki: Pki) -> None:
    client = Client(
        ServerContext(serving_files(pki, mtls=False)).new_session(), client_context(str(pki.ca), tls12=True)
    )
    with pytest.raises(ssl.SSLError) as refused:
        client.handshake()
    assert "version" in str(refused.value).lower() or "protocol" in str(refused.value).lower()


def test_unusable_files_are_refused(pki: Pki, tmp_path: Path) -> None:
    bad = tmp_path / "bad.crt"
    bad.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n")
    with pytest.raises((ssl.SSLError, OSError)):
        ServerContext(TLSFiles(str(bad), str(pki.key)))
    with pytest.raises(ssl.SSLError):  # the key of another certificate
        ServerContext(TLSFiles(str(pki.cert), str(pki.client_key)))
    with pytest.raises(FileNotFoundError):
        ServerContext(TLSFiles(str(pki.cert), str(pki.key), str(tmp_path / "absent.crt")))
