"""TLS 1.3 only, mTLS against a configured CA, certificate files reloaded when they change."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import time
from pathlib import Path

import pytest
import requests

from kubeflow_trainer_policy.gatekeeper.external_data import HttpsProvider
from kubeflow_trainer_policy_provider.certs import issue, make_ca
from kubeflow_trainer_policy_provider.sources import StaticJobSetSource
from kubeflow_trainer_policy_provider.tls import TLSFiles
from tests.provider.conftest import Pki, StartProvider
from tests.provider.helpers import client_context, post, session, wait_until


def handshake(port: int, context: ssl.SSLContext) -> str:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        if not tls.recv(100).startswith(b"HTTP/1.1 200"):
            raise ConnectionError("no answer")
        return str(tls.version())


def test_tls13_accepted_tls12_refused(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(StaticJobSetSource([]))
    assert handshake(running.server.port, client_context(str(pki.ca))) == "TLSv1.3"
    with pytest.raises(ssl.SSLError):
        handshake(running.server.port, client_context(str(pki.ca), tls12=True))
    # The server thread counts the refusal after the client has already seen it.
    wait_until(lambda: running.metrics.request_errors.value(reason="tls_handshake") == 1, timeout=5)
    time.sleep(0.2)
    assert running.metrics.request_errors.value(reason="tls_handshake") == 1, "counted exactly once"


def test_mtls_refuses_clients_without_a_certificate_from_the_configured_ca(
    start_provider: StartProvider, pki: Pki
) -> None:
    running = start_provider(StaticJobSetSource([]), mtls=True)
    port = running.server.port
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        handshake(port, client_context(str(pki.ca)))  # no client certificate
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        handshake(port, client_context(str(pki.ca), cert=(str(pki.rogue_cert), str(pki.rogue_key))))
    good = (str(pki.client_cert), str(pki.client_key))
    assert handshake(port, client_context(str(pki.ca), cert=good)) == "TLSv1.3"
    # the Gatekeeper-side client, with Gatekeeper's certificate, gets answers
    answer = HttpsProvider(running.url, str(pki.ca), client_cert=good).fetch(["team-a/job1"])
    assert answer.status_code == 200 and not answer.system_error
    assert HttpsProvider(running.url, str(pki.ca)).fetch(["team-a/job1"]).system_error
    wait_until(lambda: running.metrics.request_errors.value(reason="tls_handshake") >= 3, timeout=5)


def replace_atomically(src_cert: Path, src_key: Path, cert: Path, key: Path) -> None:
    """As a kubelet-projected Secret does: new files renamed over the old ones."""
    for src, dst in ((src_key, key), (src_cert, cert)):
        tmp = dst.with_suffix(".tmp")
        shutil.copy(src, tmp)
        os.replace(tmp, dst)


def test_rotated_certificate_files_are_reloaded_without_restart(
    start_provider: StartProvider, pki: Pki, tmp_path: Path
) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(pki.cert, cert)
    shutil.copy(pki.key, key)
    running = start_provider(StaticJobSetSource([]), tls=TLSFiles(str(cert), str(key)), tls_check_interval=0.1)
    post(session(str(pki.ca)), running.url, [])

    new_ca = make_ca("rotated-ca")
    (tmp_path / "new-ca.crt").write_bytes(new_ca.cert_pem)
    issue(new_ca, "provider", ["127.0.0.1"]).write(tmp_path / "new.crt", tmp_path / "new.key")

    # a half-written rotation (garbage cert) is refused; the old certificate keeps serving
    (tmp_path / "bad.crt").write_text("-----BEGIN CERTIFICATE-----\nnot base64\n")
    replace_atomically(tmp_path / "bad.crt", key, cert, key)
    time.sleep(0.3)
    post(session(str(pki.ca)), running.url, [])
    wait_until(lambda: running.metrics.tls_reloads.value(outcome="failed") >= 1, timeout=3)

    replace_atomically(tmp_path / "new.crt", tmp_path / "new.key", cert, key)

    def serves_new() -> bool:
        try:
            post(session(str(tmp_path / "new-ca.crt")), running.url, [])
            return True
        except requests.exceptions.SSLError:
            return False

    wait_until(serves_new, timeout=3)
    assert running.metrics.tls_reloads.value(outcome="reloaded") == 1
    with pytest.raises(requests.exceptions.SSLError):
        post(session(str(pki.ca)), running.url, [])
