"""Issue 14 item 4: the Provider's spec.timeout bounds the WHOLE external data call, as Gatekeeper's Go
client does, so a provider that trickles its answer one byte every 0.5 s becomes a system_error.

The slow providers here are real TLS servers on 127.0.0.1 that stop by themselves.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from kubeflow_trainer_policy.gatekeeper.external_data import ExternalData, HttpsProvider
from tests.cli.helpers import external_data_constraints, run_cli, serving_pki, trainjob_update_review, write_yaml

BODY = (
    b'{"apiVersion":"externaldata.gatekeeper.sh/v1beta1","kind":"ProviderResponse",'
    b'"response":{"idempotent":true,"items":[{"key":"team-a/job1","value":{"found":false}}]}}'
)
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
LIFETIME_SECONDS = 20.0
"""The slow server gives up by itself after this long, whatever the client does."""


@contextmanager
def slow_provider(pki: dict[str, Path], mode: str, byte_interval: float = 0.5) -> Iterator[str]:
    """A TLS server that either trickles its (valid) answer one byte at a time (`trickle`) or accepts the
    TCP connection and never starts the TLS handshake (`silent`). Yields its URL."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(pki["cert"], pki["key"])
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    started = time.monotonic()

    def alive() -> bool:
        return not stop.is_set() and time.monotonic() - started < LIFETIME_SECONDS

    def serve(raw: socket.socket) -> None:
        with raw:
            if mode == "silent":
                while alive():
                    time.sleep(0.05)
                return
            raw.settimeout(LIFETIME_SECONDS)
            with context.wrap_socket(raw, server_side=True) as tls:
                request = b""
                while b"\r\n\r\n" not in request or not request.rstrip().endswith(b"}"):
                    chunk = tls.recv(4096)
                    if not chunk:
                        return
                    request += chunk
                for i in range(len(ANSWER)):
                    if not alive():
                        return
                    tls.sendall(ANSWER[i : i + 1])
                    time.sleep(byte_interval)

    def accept_loop() -> None:
        while alive():
            try:
                raw, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=lambda r=raw: _quietly(serve, r), daemon=True).start()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def _quietly(function: Callable[[socket.socket], None], argument: socket.socket) -> None:
    with suppress(OSError, ssl.SSLError):  # the client gave up: that is the point
        function(argument)


def test_a_trickling_provider_times_out_as_a_whole_call(tmp_path: Path) -> None:
    pki = serving_pki(tmp_path / "pki")
    with slow_provider(pki, "trickle") as url:
        builtin = ExternalData({"jobset-state": HttpsProvider(url, str(pki["ca"]), timeout=1)})
        began = time.monotonic()
        response = builtin({"provider": "jobset-state", "keys": ["team-a/job1"]})
        elapsed = time.monotonic() - began
    # The whole answer would take len(ANSWER) * 0.5 s (about two minutes); a per-read timeout never fires.
    assert response["responses"] is None and response["errors"] is None
    assert response["system_error"] == f'failed to send external data request: Post "{url}": timeout after 1s'
    assert elapsed < 5, f"the call lasted {elapsed:.1f}s, not about the 1 s deadline"


def test_a_provider_that_never_handshakes_times_out_too(tmp_path: Path) -> None:
    pki = serving_pki(tmp_path / "pki")
    with slow_provider(pki, "silent") as url:
        began = time.monotonic()
        answer = HttpsProvider(url, str(pki["ca"]), timeout=1).fetch(["team-a/job1"])
        elapsed = time.monotonic() - began
    assert "timeout after 1s" in answer.system_error
    assert elapsed < 5


def test_a_fast_answer_within_the_deadline_is_read_whole(tmp_path: Path) -> None:
    pki = serving_pki(tmp_path / "pki")
    with slow_provider(pki, "trickle", byte_interval=0.0) as url:
        answer = HttpsProvider(url, str(pki["ca"]), timeout=5).fetch(["team-a/job1"])
    assert not answer.system_error and answer.status_code == 200
    assert [(i.key, i.value) for i in answer.items] == [("team-a/job1", {"found": False})]


def test_review_against_a_trickling_provider_reports_the_system_error(tmp_path: Path) -> None:
    """The CLI as a user runs it: the Provider object's spec.timeout (1 s) is the deadline."""
    pki = serving_pki(tmp_path / "pki")
    constraints = external_data_constraints(tmp_path / "constraints", 1)
    review = write_yaml(tmp_path / "review.yaml", trainjob_update_review())
    with slow_provider(pki, "trickle") as url:
        began = time.monotonic()
        result = run_cli(
            "review", review, "--constraints", constraints, "--provider-url", url, "--ca-file", pki["ca"], "-o", "json"
        )
        elapsed = time.monotonic() - began
    assert elapsed < 10, f"review took {elapsed:.1f}s"
    assert "Traceback" not in result.stderr
    assert result.code == 1, result  # the template fails closed: an Internal violation, a real denial
    [violation] = json.loads(result.stdout)["violations"]
    assert violation["details"]["type"] == "Internal"
    assert violation["details"]["detail"].endswith(
        f'failed to send external data request: Post "{url}": timeout after 1s'
    )
