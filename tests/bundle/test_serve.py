"""`trainer-policy bundle serve`: what OPA's bundle downloader polls (ETag, If-None-Match -> 304)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from kubeflow_trainer_policy.bundle.server import make_server
from kubeflow_trainer_policy_provider.certs import issue, make_ca
from tests.bundle.helpers import cli

NAME = "kubeflow-trainer-policy-v2.0.tar.gz"


def start_server(folder: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubeflow_trainer_policy.cli.main",
            "bundle",
            "serve",
            str(folder),
            "--port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    if not line.startswith("serving "):
        process.kill()
        raise AssertionError(f"no start line: {line!r} {process.stderr.read()}")
    return process, line.split(" at ", 1)[1].split(" ", 1)[0]


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=10)


def serve_copy(folder: Path, bundle: Path) -> Iterator[tuple[Path, str, requests.Session]]:
    shutil.copy(bundle, folder / NAME)
    process, url = start_server(folder)
    with requests.Session() as session:
        session.trust_env = False
        yield folder, url, session
    stop(process)


@pytest.fixture
def served(tmp_path, built_bundles) -> Iterator[tuple[Path, str, requests.Session]]:
    """A server of its own, for a test that rebuilds the bundle it serves."""
    yield from serve_copy(tmp_path, built_bundles["v2.0"])


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory, built_bundles) -> Iterator[tuple[Path, str, requests.Session]]:
    yield from serve_copy(tmp_path_factory.mktemp("served"), built_bundles["v2.0"])


def test_etag_304_and_a_new_etag_after_a_rebuild(served):
    folder, url, session = served
    first = session.get(url + NAME, timeout=10)
    assert first.status_code == 200
    assert first.content == (folder / NAME).read_bytes()
    etag = first.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert session.head(url + NAME, timeout=10).headers["ETag"] == etag

    again = session.get(url + NAME, headers={"If-None-Match": etag}, timeout=10)
    assert again.status_code == 304 and again.content == b"" and again.headers["ETag"] == etag
    assert session.get(url + NAME, headers={"If-None-Match": f'"other", W/{etag}'}, timeout=10).status_code == 304
    assert session.get(url + NAME, headers={"If-None-Match": '"other"'}, timeout=10).status_code == 200

    proc = cli("bundle", "build", "--profile", "v2.0", "--output-dir", str(folder), "--revision", "rebuilt-2")
    assert proc.returncode == 0, proc.stderr
    rebuilt = session.get(url + NAME, headers={"If-None-Match": etag}, timeout=10)
    assert rebuilt.status_code == 200
    assert rebuilt.content == (folder / NAME).read_bytes() != first.content
    assert b"rebuilt-2" in cli_manifest(folder / NAME)
    assert rebuilt.headers["ETag"] != etag
    assert session.get(url + NAME, headers={"If-None-Match": rebuilt.headers["ETag"]}, timeout=10).status_code == 304


def cli_manifest(bundle: Path) -> bytes:
    with tarfile.open(bundle) as tar:
        return tar.extractfile("/.manifest").read()


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        ("/missing.tar.gz", 404, "no bundle missing.tar.gz"),
        ("/../etc/passwd", 400, "malformed bundle path"),
        ("/%2e%2e/" + NAME, 400, "malformed bundle path"),
        ("/sub/" + NAME, 400, "malformed bundle path"),
        ("/" + NAME + "?x=1", 400, "malformed bundle path"),
        ("/", 400, "malformed bundle path"),
    ],
)
def test_malformed_or_unknown_paths_get_a_clear_4xx(shared_server, path, status, text):
    _, url, session = shared_server
    response = session.get(url.rstrip("/") + path, timeout=10)
    assert response.status_code == status
    assert text in response.text
    assert "ETag" not in response.headers


def test_other_methods_are_refused(shared_server):
    _, url, session = shared_server
    response = session.post(url + NAME, data=b"x", timeout=10)
    assert response.status_code == 405 and response.headers["Allow"] == "GET, HEAD"


def test_https_with_a_certificate(tmp_path, built_bundles):
    ca = make_ca("bundle-test-ca")
    leaf = issue(ca, "127.0.0.1", ["127.0.0.1"])
    leaf.write(tmp_path / "tls.crt", tmp_path / "tls.key")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    dist = tmp_path / "dist"
    dist.mkdir()
    shutil.copy(built_bundles["v2.0"], dist / NAME)
    process, url = start_server(dist, "--cert-file", str(tmp_path / "tls.crt"), "--key-file", str(tmp_path / "tls.key"))
    try:
        assert url.startswith("https://")
        with requests.Session() as session:
            session.trust_env = False
            response = session.get(url + NAME, verify=str(tmp_path / "ca.crt"), timeout=10)
        assert response.status_code == 200 and response.content == (dist / NAME).read_bytes()
    finally:
        stop(process)


def write_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate for 127.0.0.1: (cert, key, ca)."""
    ca = make_ca("bundle-test-ca")
    issue(ca, "127.0.0.1", ["127.0.0.1"]).write(folder / "tls.crt", folder / "tls.key")
    (folder / "ca.crt").write_bytes(ca.cert_pem)
    return folder / "tls.crt", folder / "tls.key", folder / "ca.crt"


def test_a_silent_connection_does_not_block_other_https_clients(tmp_path, built_bundles):
    """Issue 40, item 5: the TLS handshake ran in the accept loop, so one client that connects and sends nothing
    (no ClientHello) kept every other client waiting for as long as it stayed."""
    cert, key, ca = write_tls(tmp_path)
    dist = tmp_path / "dist"
    dist.mkdir()
    shutil.copy(built_bundles["v2.0"], dist / NAME)
    process, url = start_server(dist, "--cert-file", str(cert), "--key-file", str(key))
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10), requests.Session() as session:
            session.trust_env = False
            for _ in range(3):  # a second silent one too, and a fetch after it
                response = session.get(url + NAME, verify=str(ca), timeout=10)
                assert response.status_code == 200 and response.content == (dist / NAME).read_bytes()
                with socket.create_connection(("127.0.0.1", port), timeout=10):
                    pass
    finally:
        stop(process)


def test_a_connection_without_a_handshake_is_closed_after_the_handshake_timeout(tmp_path, built_bundles):
    """The silent client's thread does not wait forever: the server closes its side after the handshake timeout."""
    cert, key, _ = write_tls(tmp_path)
    shutil.copy(built_bundles["v2.0"], tmp_path / NAME)
    server = make_server(tmp_path, "127.0.0.1", 0, str(cert), str(key), handshake_timeout=0.5)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with socket.create_connection(server.server_address[:2], timeout=30) as silent:
            with contextlib.suppress(ConnectionResetError):  # closed or reset: either way, not left waiting
                assert silent.recv(1) == b""
            context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
            with (
                socket.create_connection(server.server_address[:2], timeout=10) as raw,
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                tls.sendall(f"HEAD /{NAME} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
                assert tls.recv(100).startswith(b"HTTP/1.1 200")  # the server itself still serves
    finally:
        server.shutdown()
        server.server_close()


def test_help_shows_defaults_and_bad_folder_exits_2(tmp_path):
    help_text = cli("bundle", "serve", "--help").stdout
    assert "default 127.0.0.1" in help_text and "default 8282" in help_text
    proc = cli("bundle", "serve", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.strip() == f"trainer-policy bundle: {tmp_path / 'nope'}: no such folder"
