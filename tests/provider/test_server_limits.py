"""Bad input over real TLS 1.3: each gets a clear ProviderResponse error or HTTP error, and the
server keeps answering. Plus a hypothesis fuzz of request bodies."""

from __future__ import annotations

import json
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy_provider.http_server import Limits
from kubeflow_trainer_policy_provider.sources import Lookup, StaticJobSetSource
from tests.provider.conftest import Pki, Running, StartProvider
from tests.provider.helpers import (
    client_context,
    items,
    post,
    provider_request,
    raw_exchange,
    session,
    status_and_json,
)

JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "job1", "namespace": "team-a"},
    "status": {"replicatedJobsStatus": [{"name": "node", "active": 1}]},
}


@pytest.fixture
def running(start_provider: StartProvider) -> Running:
    return start_provider(
        StaticJobSetSource([JOBSET]),
        max_keys=50,
        limits=Limits(max_body_bytes=4096, max_connections=8, idle_timeout=2.0, handshake_timeout=1.0),
    )


def still_serving(running: Running, pki: Pki) -> None:
    body = post(session(str(pki.ca)), running.url, ["team-a/job1"])
    assert items(body)["team-a/job1"]["value"] == {"found": True, "activeReplicatedJobs": ["node"]}


def system_error(body: Any) -> str:
    return body["response"]["systemError"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_non_post_is_405_with_a_provider_response(running: Running, pki: Pki, method: str) -> None:
    response = session(str(pki.ca)).request(method, running.url, timeout=5)
    assert response.status_code == 405 and response.headers["Allow"] == "POST"
    assert "POST" in system_error(response.json()) or method in system_error(response.json())
    still_serving(running, pki)


def test_oversized_body_is_413_without_reading_it(running: Running, pki: Pki) -> None:
    payload = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"{" * 1000
    status, body = status_and_json(raw_exchange(running.server.port, str(pki.ca), payload))
    assert status == 413 and "exceeds 4096 bytes" in system_error(body)
    still_serving(running, pki)


def test_malformed_json_is_400_with_system_error(running: Running, pki: Pki) -> None:
    response = session(str(pki.ca)).post(running.url, data=b'{"apiVersion": ', timeout=5)
    assert response.status_code == 400 and "not valid JSON" in system_error(response.json())
    still_serving(running, pki)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"apiVersion": "externaldata.gatekeeper.sh/v1alpha1", "kind": "ProviderRequest", "request": {"keys": []}},
            "apiVersion externaldata.gatekeeper.sh/v1beta1",
        ),
        (
            {"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "Other", "request": {"keys": []}},
            "kind ProviderRequest",
        ),
        ("just a string", "JSON object"),
    ],
)
def test_wrong_api_version_or_kind_is_a_system_error(running: Running, pki: Pki, doc: Any, message: str) -> None:
    response = session(str(pki.ca)).post(running.url, json=doc, timeout=5)
    assert response.status_code == 200 and message in system_error(response.json())
    still_serving(running, pki)


def test_too_many_keys_is_a_system_error(running: Running, pki: Pki) -> None:
    response = session(str(pki.ca)).post(running.url, json=provider_request(["a/b"] * 51), timeout=5)
    assert response.status_code == 200 and system_error(response.json()) == "too many keys: 51 > 50"
    still_serving(running, pki)


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        (b"POST / HTTP/1.1\r\nHost: x\r\n\r\n", 411),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n\r\n", 400),
        # two framings of one body (request smuggling): refused, even when they agree
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n{}", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 411),
        (b"POST / HTTP/1.1\r\nHost: x\r\n Content-Length: 2\r\n\r\n{}", 400),  # folded header
        (b"\x00\x01garbage\r\n\r\n", 400),
        (b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", 431),
    ],
)
def test_broken_http_gets_an_http_error(running: Running, pki: Pki, payload: bytes, status: int) -> None:
    got, body = status_and_json(raw_exchange(running.server.port, str(pki.ca), payload))
    assert got == status
    assert isinstance(body, dict) and system_error(body)
    still_serving(running, pki)


@pytest.mark.parametrize("depth", [50_000, 500_000])
def test_json_nested_too_deep_gets_a_provider_response(start_provider: StartProvider, pki: Pki, depth: int) -> None:
    running = start_provider(StaticJobSetSource([JOBSET]))  # default 1 MiB body limit
    response = session(str(pki.ca)).post(running.url, data=b"[" * depth + b"]" * depth, timeout=5)
    assert response.status_code == 400 and "nested too deeply" in system_error(response.json())
    still_serving(running, pki)


class SleepySource:
    """A fake slow source (each lookup sleeps 0.2 s) for the per-request deadline."""

    def lookup(self, namespace: str, name: str) -> Lookup:
        time.sleep(0.2)
        return Lookup(jobset=None)


def test_request_timeout_answers_in_time_fake_slow_source(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(SleepySource(), request_timeout=0.5, health_port=0)
    s = session(str(pki.ca))
    started = time.monotonic()
    body = post(s, running.url, [f"ns/k{i}" for i in range(20)])
    assert time.monotonic() - started < 1.5
    errors = [item for item in body["response"]["items"] if "error" in item]
    assert errors and "timed out" in errors[-1]["error"]
    # a slow lookup runs off the event loop: probes answer at once meanwhile
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(post, s, running.url, [f"ns/k{i}" for i in range(20)])
        time.sleep(0.1)
        started = time.monotonic()
        assert requests.get(f"http://127.0.0.1:{running.server.health_port}/healthz", timeout=5).text == "ok\n"
        assert time.monotonic() - started < 0.1
        assert not slow.done()
        slow.result()


def test_idle_and_handshake_stalls_are_closed(running: Running, pki: Pki) -> None:
    plain = socket.create_connection(("127.0.0.1", running.server.port), timeout=5)  # never starts TLS
    tls = client_context(str(pki.ca)).wrap_socket(
        socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
    )  # handshakes, then sends nothing
    still_serving(running, pki)
    assert plain.recv(1) == b""  # closed by the server after the handshake timeout
    assert tls.recv(1) == b""  # closed after the idle timeout
    plain.close()
    tls.close()
    still_serving(running, pki)


def test_at_the_connection_cap_the_oldest_idle_connection_makes_room(start_provider: StartProvider, pki: Pki) -> None:
    running = start_provider(StaticJobSetSource([JOBSET]), limits=Limits(max_connections=2, idle_timeout=30))
    context = client_context(str(pki.ca))
    held = [
        context.wrap_socket(
            socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
        )
        for _ in range(2)
    ]
    time.sleep(1.2)  # past the eviction grace of a fresh connection
    still_serving(running, pki)  # a third connection is admitted ...
    assert held[0].recv(1) == b""  # ... by closing the one idle the longest
    assert running.metrics.evictions.value(state="idle_before_request") >= 1
    assert running.metrics.request_errors.value(reason="too_many_connections") == 0
    for sock in held:
        sock.close()


def test_at_the_cap_with_every_connection_busy_new_ones_are_refused_fake_slow_source(
    start_provider: StartProvider, pki: Pki
) -> None:
    running = start_provider(SleepySource(), request_timeout=0.5, limits=Limits(max_connections=2))
    context = client_context(str(pki.ca))
    busy = []
    for _ in range(2):
        sock = context.wrap_socket(
            socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
        )
        body = json.dumps(provider_request([f"ns/k{i}" for i in range(5)])).encode()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        busy.append(sock)
    time.sleep(0.1)  # both are being answered (the fake source sleeps)
    with pytest.raises((ssl.SSLError, OSError)):
        extra = context.wrap_socket(
            socket.create_connection(("127.0.0.1", running.server.port), timeout=5), server_hostname="127.0.0.1"
        )
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        if extra.recv(100) == b"":
            raise OSError("closed")
    assert running.metrics.request_errors.value(reason="too_many_connections") >= 1
    for sock in busy:  # the busy ones were answered, not evicted
        assert sock.recv(100).startswith(b"HTTP/1.1 200")
        sock.close()


def test_probes_and_metrics(running: Running, pki: Pki) -> None:
    s = session(str(pki.ca))
    post(s, running.url, ["team-a/job1", "bad"])
    assert s.get(running.url + "healthz", timeout=5).text == "ok\n"
    assert s.get(running.url + "readyz", timeout=5).status_code == 200
    text = s.get(running.url + "metrics", timeout=5).text
    for line in (
        'provider_keys_total{outcome="error"} 1',
        'provider_keys_total{outcome="value"} 1',
        'provider_requests_total{code="200",endpoint="provider"} 1',
        'provider_requests_total{code="200",endpoint="/healthz"} 1',
        'provider_request_duration_seconds_bucket{le="+Inf"} 1',
        "provider_tls_reloads_total",
    ):
        assert line in text
    logs = [json.loads(line) for line in running.logs.getvalue().splitlines()]
    assert logs[0]["event"] == "provider_started" and all({"ts", "level", "event"} <= set(rec) for rec in logs)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20,
)
BODIES = st.one_of(
    st.binary(max_size=6000),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.lists(st.text(max_size=80), max_size=60).map(lambda keys: json.dumps(provider_request(keys)).encode()),
    st.builds(
        lambda doc: json.dumps(doc).encode(),
        st.fixed_dictionaries(
            {
                "apiVersion": st.sampled_from(["externaldata.gatekeeper.sh/v1beta1", "x"]),
                "kind": st.sampled_from(["ProviderRequest", "ProviderResponse"]),
                "request": JSONISH,
            },
        ),
    ),
)


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES)
def test_fuzzed_bodies_never_crash_or_hang_the_server(running: Running, pki: Pki, body: bytes) -> None:
    s = getattr(running, "_fuzz_session", None) or session(str(pki.ca))
    running._fuzz_session = s  # type: ignore[attr-defined]
    response = s.post(running.url, data=body, headers={"Content-Type": "application/json"}, timeout=3)
    assert response.status_code in (200, 400, 413)
    doc = response.json()
    assert doc["kind"] == "ProviderResponse" and doc["response"]["idempotent"] is True
    if response.status_code == 200 and not doc["response"].get("systemError"):
        for item in doc["response"]["items"]:
            assert ("value" in item) != ("error" in item)


def test_server_still_answers_after_the_fuzz(running: Running, pki: Pki) -> None:
    still_serving(running, pki)
