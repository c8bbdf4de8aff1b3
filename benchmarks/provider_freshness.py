"""What the fresh-or-fail check costs a lookup: the watch-cache provider of the working tree against the same
provider as of `--compare-ref` (default main), in one run.

Each server is `benchmarks/watch_cache_server.py` (10k JobSets installed as a completed list, no kube-apiserver;
for the working tree a thread stands in for the prober of a healthy API), pinned to CPU 0 and serving TLS 1.3 with
mTLS. Each lookup is made as Gatekeeper makes it: a new TCP + TLS connection with the client certificate, one
ProviderRequest with one `<namespace>/<name>#<uid>` key, the answer read to its end. The servers are measured in
alternating rounds (`--rounds` x `--lookups`) so each sees the same machine load; every answer is checked to be a
value (not an error), so a stale working-tree cache cannot pass for a fast one.

    python -m benchmarks.provider_freshness [--rounds 6] [--lookups 300] [--compare-ref main]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import percentile, write_result
from benchmarks.provider_servers import (
    LOOPBACK,
    REPO,
    Server,
    free_port,
    imported_from,
    machine_load,
    make_pki,
    old_tree,
    start_server,
    write_data,
)


def server_command(data: Path, port: int, pki: Path) -> list[str]:
    return [
        sys.executable,
        str(REPO / "benchmarks" / "watch_cache_server.py"),
        str(data),
        *("--listen", f"{LOOPBACK}:{port}", "--tls-cert", str(pki / "tls.crt"), "--tls-key", str(pki / "tls.key")),
        *("--client-ca", str(pki / "client-ca.crt")),
    ]


def lookup(port: int, context: ssl.SSLContext, body: bytes) -> float:
    """Milliseconds for one lookup on a new connection (Gatekeeper's client makes one per call)."""
    started = time.perf_counter()
    with (
        socket.create_connection((LOOPBACK, port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=LOOPBACK) as tls,
    ):
        tls.sendall(body)
        data = b""
        while True:
            chunk = tls.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                lines = head.split(b"\r\n")
                length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length"))
                if len(rest) >= length:
                    break
    elapsed = (time.perf_counter() - started) * 1000.0
    item = json.loads(rest)["response"]["items"][0]
    if "value" not in item:
        raise RuntimeError(f"lookup answered an error: {item}")
    return elapsed


def request(key: str) -> bytes:
    payload = json.dumps(
        {"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "ProviderRequest", "request": {"keys": [key]}}
    ).encode()
    head = f"POST / HTTP/1.1\r\nHost: {LOOPBACK}\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(payload)}\r\n"
    return head.encode() + b"\r\n" + payload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--jobsets", type=int, default=10_000)
    parser.add_argument("--compare-ref", default="main")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ktp-freshness-"))
    pki = make_pki(work)
    data, keys = write_data(work, args.jobsets)
    baseline = old_tree(work, args.compare_ref)
    old_env = {**os.environ, "PYTHONPATH": str(baseline)}
    provenance = {
        "working_tree": str(imported_from(REPO / "provider", "kubeflow_trainer_policy_provider")),
        args.compare_ref: str(imported_from(baseline, "kubeflow_trainer_policy_provider")),
    }
    servers: dict[str, Server] = {}
    try:
        port = free_port()
        servers["working_tree"] = start_server("working_tree", server_command(data, port, pki), port, pki)
        port = free_port()
        baseline_name = f"at_{args.compare_ref}"
        servers[baseline_name] = start_server(baseline_name, server_command(data, port, pki), port, pki, env=old_env)
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
        samples: dict[str, list[float]] = {name: [] for name in servers}
        per_round: dict[str, list[float]] = {name: [] for name in servers}
        load_before = machine_load()
        for round_index in range(args.rounds):
            order = list(servers) if round_index % 2 == 0 else list(reversed(servers))
            for name in order:
                server = servers[name]
                times = [
                    lookup(server.port, context, request(f"{keys[(round_index * args.lookups + i) % len(keys)]}#u{i}"))
                    for i in range(args.lookups)
                ]
                samples[name] += times
                per_round[name].append(statistics.median(times))
        load_after = machine_load()
        result: dict[str, Any] = {
            "what": "one-key lookups, a new TLS 1.3 + mTLS connection each, against the watch-cache provider",
            "jobsets": args.jobsets,
            "rounds": args.rounds,
            "lookups_per_round": args.lookups,
            "imported_from": provenance,
            "machine_load": {"before": load_before, "after": load_after},
            "servers": {
                name: {
                    "p50_ms": round(percentile(times, 50), 3),
                    "p99_ms": round(percentile(times, 99), 3),
                    "median_per_round_ms": [round(t, 3) for t in per_round[name]],
                    **servers[name].memory(),
                }
                for name, times in samples.items()
            },
        }
        ratios = [new / old for new, old in zip(per_round["working_tree"], per_round[baseline_name], strict=True)]
        result["p50_ratio_working_tree_to_baseline_per_round"] = {
            "min": round(min(ratios), 3),
            "median": round(statistics.median(ratios), 3),
            "max": round(max(ratios), 3),
        }
        path = write_result("provider_freshness", result)
        print(json.dumps(result, indent=2))
        print(f"wrote {path}")
    finally:
        for server in servers.values():
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
