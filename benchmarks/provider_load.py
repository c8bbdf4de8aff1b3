"""Load benchmark of the external data provider, and of a bare TLS echo server on the same stack.

Setup: a real kube-apiserver + etcd on 127.0.0.1 (tests/kube/cluster.py) holding N JobSets
(default 10,000; one in ten with an active replicated job), the provider started as its own process
(`trainer-policy provider serve --kubeconfig ...`) with a warm watch cache, and an echo server
process on the same HTTP/TLS stack (provider.http_server, answering each POST with its body).
The load generator is a separate process: closed-loop keep-alive TLS 1.3 connections to 127.0.0.1
only, 10-key ProviderRequests, bounded by a duration and a request count.

Reported per server: requests/s, p50/p99 latency, RSS; for the provider also Kubernetes API
calls per request (from its /metrics) and the cache size. Results: benchmarks/results/provider_load.json.

    python -m benchmarks.provider_load [--jobsets 10000] [--duration 10] [--connections 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from benchmarks.common import percentile, write_result

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
KEYS_PER_REQUEST = 10
MAX_REQUESTS_PER_RUN = 2_000_000
STACK = "http.server.ThreadingHTTPServer + ssl (TLS 1.3)"
TARGETS = {"requests_per_s": 1000.0, "p99_ms": 10.0, "echo_ratio": 0.70, "api_calls_per_request": 0.0}


# ------------------------------------------------------------------ load generator (child process)
def _request_bytes(keys: list[str]) -> bytes:
    body = json.dumps(
        {"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "ProviderRequest", "request": {"keys": keys}}
    ).encode()
    head = f"POST / HTTP/1.1\r\nHost: provider\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def _connection(
    port: int, context: ssl.SSLContext, payloads: list[bytes], stop_at: float, budget: list[int], out: dict[str, Any]
) -> None:
    reader, writer = await asyncio.open_connection(LOOPBACK, port, ssl=context, server_hostname=LOOPBACK)
    assert writer.get_extra_info("ssl_object").version() == "TLSv1.3"
    index = random.randrange(len(payloads))
    while time.monotonic() < stop_at and budget[0] > 0:
        budget[0] -= 1
        payload = payloads[index % len(payloads)]
        index += 1
        started = time.perf_counter()
        writer.write(payload)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
        body = await reader.readexactly(length)
        out["latencies"].append(time.perf_counter() - started)
        if not head.startswith(b"HTTP/1.1 200"):
            out["errors"] += 1
        elif out["check"] and b'"error"' in body:
            out["key_errors"] += 1
    writer.close()


def _load_process(
    port: int, ca_file: str, keys: list[str], connections: int, duration: float, max_requests: int, queue: Any
) -> None:
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    rng = random.Random(7)
    payloads = [_request_bytes(rng.sample(keys, KEYS_PER_REQUEST)) for _ in range(500)]
    out: dict[str, Any] = {"latencies": [], "errors": 0, "key_errors": 0, "check": True}

    async def run() -> float:
        stop_at = time.monotonic() + duration
        budget = [max_requests]
        started = time.monotonic()
        await asyncio.gather(*(_connection(port, context, payloads, stop_at, budget, out) for _ in range(connections)))
        return time.monotonic() - started

    elapsed = asyncio.run(run())
    queue.put(
        {"elapsed": elapsed, "latencies": out["latencies"], "errors": out["errors"], "key_errors": out["key_errors"]}
    )


def generate_load(port: int, ca_file: str, keys: list[str], connections: int, duration: float) -> dict[str, Any]:
    """Run the load generator in a separate process; bounded by `duration` and MAX_REQUESTS_PER_RUN.

    Returns the raw round: elapsed seconds, latencies (s), HTTP errors, responses holding key errors."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(
        target=_load_process, args=(port, ca_file, keys, connections, duration, MAX_REQUESTS_PER_RUN, queue)
    )
    proc.start()
    result = queue.get(timeout=duration + 60)
    proc.join(timeout=30)
    return dict(result)


def summarize(rounds: list[dict[str, Any]], connections: int) -> dict[str, Any]:
    latencies = [x for r in rounds for x in r["latencies"]]
    elapsed = sum(r["elapsed"] for r in rounds)
    return {
        "requests": len(latencies),
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "requests_per_s_by_round": [round(len(r["latencies"]) / r["elapsed"], 1) for r in rounds],
        "p50_ms": round(percentile(latencies, 50) * 1000, 3),
        "p99_ms": round(percentile(latencies, 99) * 1000, 3),
        "max_ms": round(max(latencies) * 1000, 3),
        "http_errors": sum(r["errors"] for r in rounds),
        "responses_with_key_errors": sum(r["key_errors"] for r in rounds),
        "connections": connections,
        "keys_per_request": KEYS_PER_REQUEST,
    }


# --------------------------------------------------------------------------- echo server (child)
def echo_server(port: int, cert: str, key: str) -> None:
    """The same server class, TLS and threads as the provider; each POST answered with its own body."""
    from provider import http_server
    from provider.logs import JsonLogger
    from provider.metrics import ProviderMetrics
    from provider.tls import ReloadingTLS, TLSFiles

    class Echo(http_server._RequestHandler):
        def do_POST(self) -> None:
            body = self._read_body()
            if body is not None:
                self._send(200, body)

    metrics, logger = ProviderMetrics(), JsonLogger()
    server = http_server.ProviderHTTPServer(
        (LOOPBACK, port),
        None,
        metrics,
        logger,
        ReloadingTLS(TLSFiles(cert, key), metrics, logger),
        http_server.Limits(),
        lambda: True,
    )
    server.RequestHandlerClass = Echo
    server.serve_forever()


# ------------------------------------------------------------------------------ orchestration
def rss_mib(pid: int) -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {
        "rss_mib": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
        "peak_rss_mib": round(int(fields["VmHWM"].split()[0]) / 1024, 1),
    }


def api_calls(metrics_text: str) -> dict[str, float]:
    calls: dict[str, float] = {}
    for match in re.finditer(r'provider_kube_api_calls_total\{code="[^"]*",verb="(\w+)"\} (\S+)', metrics_text):
        calls[match.group(1)] = calls.get(match.group(1), 0.0) + float(match.group(2))
    return calls


def gauge(metrics_text: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", metrics_text, re.M)
    return float(match.group(1)) if match else float("nan")


def create_jobsets(cluster: Any, count: int, namespaces: int = 20) -> list[str]:
    names = [f"bench-{i % namespaces}/job-{i}" for i in range(count)]
    for n in range(namespaces):
        cluster.create_namespace(f"bench-{n}")
    local = threading.local()

    def create(key: str) -> None:
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = requests.Session()
            s.trust_env, s.verify = False, str(cluster.ca_file)
            s.headers["Authorization"] = f"Bearer {cluster.token}"
        namespace, name = key.split("/")
        base = f"{cluster.url}/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets"
        body = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": name},
            "spec": {"replicatedJobs": [{"name": "launcher", "replicas": 1}, {"name": "node", "replicas": 4}]},
        }
        r = s.post(base, json=body, timeout=30)
        if r.status_code not in (201, 409):
            raise RuntimeError(f"create {key}: HTTP {r.status_code} {r.text[:200]}")
        if int(name.split("-")[1]) % 10 == 0:
            status = {
                "status": {
                    "replicatedJobsStatus": [
                        {"name": "launcher", "active": 0, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0},
                        {"name": "node", "active": 4, "ready": 4, "succeeded": 0, "failed": 0, "suspended": 0},
                    ]
                }
            }
            r = s.patch(
                f"{base}/{name}/status",
                data=json.dumps(status),
                timeout=30,
                headers={"Content-Type": "application/merge-patch+json"},
            )
            r.raise_for_status()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, names))
    return names


def wait_http(url: str, verify: str | bool, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, verify=verify, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready within {timeout} s")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def run(jobsets: int, duration: float, connections: int, rounds: int = 3) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from provider.certs import issue, make_ca
    from tests.kube.cluster import KubeCluster

    work = Path(tempfile.mkdtemp(prefix="ktp-bench-"))
    ca = make_ca()
    (work / "ca.crt").write_bytes(ca.cert_pem)
    issue(ca, "provider", [LOOPBACK]).write(work / "tls.crt", work / "tls.key")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs: list[subprocess.Popen[bytes]] = []
    with KubeCluster.start() as cluster:
        t = time.monotonic()
        keys = create_jobsets(cluster, jobsets)
        create_s = time.monotonic() - t
        keys_with_missing = keys + [f"bench-0/missing-{i}" for i in range(len(keys) // 10)]
        try:
            port, health = free_port(), free_port()
            provider = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "generator.cli.main",
                    "provider",
                    "serve",
                    "--listen",
                    f"{LOOPBACK}:{port}",
                    "--health-port",
                    str(health),
                    "--tls-cert",
                    str(work / "tls.crt"),
                    "--tls-key",
                    str(work / "tls.key"),
                    "--kubeconfig",
                    str(cluster.kubeconfig),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stderr=subprocess.DEVNULL,
            )
            procs.append(provider)
            t = time.monotonic()
            wait_http(f"http://{LOOPBACK}:{health}/readyz", False, 120)
            first_list_s = time.monotonic() - t
            echo_port = free_port()
            echo = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.provider_load",
                    "--echo-server",
                    str(echo_port),
                    str(work / "tls.crt"),
                    str(work / "tls.key"),
                ],
                env=env,
                stderr=subprocess.DEVNULL,
            )
            procs.append(echo)
            wait_echo(echo_port, str(work / "ca.crt"))
            ca_file = str(work / "ca.crt")
            metrics_url = f"http://{LOOPBACK}:{health}/metrics"
            before = requests.get(metrics_url, timeout=5).text
            provider_rounds, echo_rounds = [], []
            for _ in range(rounds):  # alternate, so both see the same machine load
                provider_rounds.append(generate_load(port, ca_file, keys_with_missing, connections, duration / rounds))
                echo_rounds.append(generate_load(echo_port, ca_file, keys_with_missing, connections, duration / rounds))
            after = requests.get(metrics_url, timeout=5).text
            provider_load = summarize(provider_rounds, connections)
            echo_load = summarize(echo_rounds, connections)
            echo_load["responses_with_key_errors"] = None
            calls_before, calls_after = api_calls(before), api_calls(after)
            get_calls = calls_after.get("get", 0) - calls_before.get("get", 0)
            all_calls = sum(calls_after.values()) - sum(calls_before.values())
            provider_load.update(rss_mib(provider.pid))
            echo_load.update(rss_mib(echo.pid))
            provider_load["api_get_calls_per_request"] = get_calls / max(provider_load["requests"], 1)
            provider_load["api_calls_per_request_incl_watch"] = all_calls / max(provider_load["requests"], 1)
            provider_load["cache_jobsets"] = gauge(after, "provider_cache_jobsets")
            provider_load["first_list_s"] = round(first_list_s, 2)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=10)
    ratio = provider_load["requests_per_s"] / echo_load["requests_per_s"]
    verdict = {
        "requests_per_s_ge_1000": provider_load["requests_per_s"] >= TARGETS["requests_per_s"],
        "p99_lt_10ms": provider_load["p99_ms"] < TARGETS["p99_ms"],
        "echo_ratio_ge_0_70": ratio >= TARGETS["echo_ratio"],
        "zero_api_calls_per_request": provider_load["api_get_calls_per_request"] == 0,
    }
    return {
        "setup": {
            "jobsets": jobsets,
            "create_jobsets_s": round(create_s, 1),
            "duration_s": duration,
            "connections": connections,
            "rounds": rounds,
            "stack": STACK,
            "load_generator": "separate process, asyncio, keep-alive, closed loop, 127.0.0.1",
        },
        "provider": provider_load,
        "echo": echo_load,
        "provider_to_echo_throughput": round(ratio, 3),
        "targets": TARGETS,
        "met": verdict,
    }


def wait_echo(port: int, ca_file: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            requests.post(f"https://{LOOPBACK}:{port}/", data=b"{}", verify=ca_file, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError("echo server did not start")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobsets", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=12.0, help="seconds of load per server, all rounds")
    parser.add_argument("--connections", type=int, default=8, help="keep-alive connections of the load generator")
    parser.add_argument("--rounds", type=int, default=3, help="alternating provider/echo rounds (default 3)")
    parser.add_argument("--echo-server", nargs=3, metavar=("PORT", "CERT", "KEY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.echo_server:
        echo_server(int(args.echo_server[0]), args.echo_server[1], args.echo_server[2])
        return
    result = run(args.jobsets, args.duration, args.connections, args.rounds)
    path = write_result("provider_load", result)
    p, e = result["provider"], result["echo"]
    print(
        f"provider: {p['requests_per_s']:.0f} req/s p50 {p['p50_ms']:.2f} ms p99 {p['p99_ms']:.2f} ms "
        f"api GETs/request {p['api_get_calls_per_request']:g} rss {p['rss_mib']} MiB cache {p['cache_jobsets']:g}\n"
        f"echo:     {e['requests_per_s']:.0f} req/s p50 {e['p50_ms']:.2f} ms p99 {e['p99_ms']:.2f} ms "
        f"rss {e['rss_mib']} MiB\n"
        f"ratio {result['provider_to_echo_throughput']:.2f}; targets met: {result['met']} -> {path}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
