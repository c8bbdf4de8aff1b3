"""Watch-stream faults that a healthy kube-apiserver does not produce on demand, against a fake API
server on 127.0.0.1 (names say so): a 410 ERROR event mid-stream, bookmarks, a 500 on list."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from kubeflow_trainer_policy_provider.kube_auth import KubeCredentials
from kubeflow_trainer_policy_provider.kube_source import KubeJobSetSource, WatchSettings
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from tests.provider.helpers import wait_until


def jobset(name: str, rv: str, active: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        "status": {"replicatedJobsStatus": [{"name": "node", "active": active}]},
    }


class FakeApi:
    """Scripted answers: `lists` (status, body) and `watches` (list of events) are consumed in order."""

    def __init__(self, lists: list[tuple[int, Any]], watches: list[list[dict[str, Any]]]):
        self.lists, self.watches = lists, watches
        self.requests: list[dict[str, list[str]]] = []
        self.hold = threading.Event()
        self.probe_status = 200
        self.probes = self.gets = 0


def serve(api: FakeApi) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            if not urlparse(self.path).path.endswith("/jobsets"):  # an object GET: this fake has no objects
                api.gets += 1
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if query.get("limit") == ["1"]:  # the prober's health read: a healthy, empty answer (or probe_status)
                api.probes += 1
                data = json.dumps({"metadata": {"resourceVersion": "1"}, "items": []}).encode()
                self.send_response(api.probe_status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            api.requests.append(query)
            if "watch" not in query:
                status, body = api.lists.pop(0) if api.lists else (500, {"message": "no more lists"})
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            events = api.watches.pop(0) if api.watches else None
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in events or []:
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            if events is None:
                api.hold.wait(10)  # a quiet, healthy watch
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def run_fake() -> Iterator[Any]:
    stops: list[Any] = []

    def run(api: FakeApi, **settings: Any) -> tuple[KubeJobSetSource, ProviderMetrics]:
        server = serve(api)
        metrics = ProviderMetrics()
        creds = KubeCredentials(server=f"http://127.0.0.1:{server.server_address[1]}", token="t")
        watch = WatchSettings(**{"backoff_initial": 0.05, **settings})
        source = KubeJobSetSource(creds, metrics, JsonLogger(min_level="error"), watch)
        stops.append((api, server, source))
        source.start()
        return source, metrics

    yield run
    for api, server, source in stops:
        api.hold.set()
        source.stop()
        server.shutdown()


def test_gone_event_relists_and_bookmarks_advance_the_version_fake_api(run_fake: Any) -> None:
    api = FakeApi(
        lists=[
            (200, {"metadata": {"resourceVersion": "10"}, "items": [jobset("a", "9", active=1)]}),
            (200, {"metadata": {"resourceVersion": "30"}, "items": [jobset("b", "29")]}),
        ],
        watches=[
            [
                {"type": "MODIFIED", "object": jobset("a", "11", active=0)},
                {"type": "BOOKMARK", "object": {"kind": "JobSet", "metadata": {"resourceVersion": "15"}}},
                {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}},
            ]
        ],
    )
    source, metrics = run_fake(api)
    wait_until(lambda: metrics.api_calls.value(verb="list", code="200") == 2 and source.synced, timeout=5)
    # the cache is trusted at the end of the re-list, a moment before the next watch is requested
    wait_until(lambda: sum("watch" in q for q in api.requests) >= 2, timeout=5)
    assert not source.lookup("ns", "a").found  # gone after the re-list
    assert source.lookup("ns", "b").found
    assert metrics.watch_restarts.value(reason="gone") == 1
    watch_versions = [q["resourceVersion"][0] for q in api.requests if "watch" in q]
    assert watch_versions[:2] == ["10", "30"]  # first watch from the list, second from the re-list
    assert all(q["allowWatchBookmarks"] == ["true"] for q in api.requests if "watch" in q)


def test_bookmark_version_is_used_when_a_stream_ends_fake_api(run_fake: Any) -> None:
    api = FakeApi(
        lists=[(200, {"metadata": {"resourceVersion": "10"}, "items": []})],
        watches=[[{"type": "BOOKMARK", "object": {"kind": "JobSet", "metadata": {"resourceVersion": "42"}}}]],
    )
    _, metrics = run_fake(api)
    wait_until(lambda: len([q for q in api.requests if "watch" in q]) >= 2, timeout=5)
    assert [q["resourceVersion"][0] for q in api.requests if "watch" in q][:2] == ["10", "42"]
    assert metrics.api_calls.value(verb="list", code="200") == 1


def test_list_failure_keeps_the_source_unready_and_retries_with_backoff_fake_api(run_fake: Any) -> None:
    api = FakeApi(
        lists=[
            (500, {"message": "etcd down"}),
            (500, {"message": "etcd down"}),
            (200, {"metadata": {"resourceVersion": "5"}, "items": [jobset("a", "4", active=2)]}),
        ],
        watches=[],
    )
    source, metrics = run_fake(api)
    assert source.wait_ready(5)
    assert metrics.api_calls.value(verb="list", code="500") == 2
    assert metrics.watch_restarts.value(reason="error") == 2
    assert source.lookup("ns", "a").value == {"found": True, "activeReplicatedJobs": ["node"]}


def test_probes_answered_with_errors_end_trust_in_the_cache_after_the_bound_fake_api(run_fake: Any) -> None:
    """An API server that answers, but not with the state (HTTP 500 to every probe), never confirms the cache:
    past the bound the cached "inactive" is no longer served; the key is a live GET (here an error) and the
    watch is aborted for a re-list."""
    api = FakeApi(lists=[(200, {"metadata": {"resourceVersion": "10"}, "items": [jobset("a", "9")]})], watches=[])
    source, metrics = run_fake(api, max_staleness=1.0)
    assert source.wait_ready(5)
    assert source.lookup("ns", "a").value == {"found": True, "activeReplicatedJobs": []}
    api.probe_status = 500
    wait_until(lambda: not source.fresh, timeout=5)
    assert source.lookup("ns", "a").error and api.gets >= 1
    wait_until(lambda: metrics.watch_restarts.value(reason="stale") >= 1, timeout=5)
    assert metrics.api_calls.value(verb="probe", code="500") >= 1
