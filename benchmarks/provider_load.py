"""Provider benchmark: lookups as Gatekeeper's client makes them (the headline), then throughput (secondary).

Every server is its own process pinned to CPU 0 with taskset, serves 10k JobSets over TLS 1.3 with mTLS
(the same certificates), and is measured in alternating rounds so each sees the same machine load; ratios
to the Go reference are taken per round (min/median/max). Clients run pinned to CPU 1.

Servers: `python` (`trainer-policy provider serve --objects DATA.json`, the working tree), `python-at-<ref>`
(the provider as of git `--compare-ref`, default main), `go-provider` (benchmarks/go/provider, a stdlib Go
provider with the same request, response and value; built, like the client, with Gatekeeper's Go).

Headline (`gatekeeper_client`): benchmarks/go/gkclient, which makes each lookup exactly as Gatekeeper's
external data client does (a new http.Transport per call: new TCP + TLS 1.3 connection with the client
certificate, left open afterwards; spec.timeout 2 s), 10 keys per lookup:
- `sequential`: `--lookups` lookups one after another per round: p50 and p99 (and the time after the
  TLS handshake, where a server-side stall shows);
- `open_loop`: lookups started at each of `--rates` per second for `--open-seconds`, whatever the answers
  do, latency counted from when each was due: errors, p50, p99;
- `flood`: the open loop at `--flood-rate` while benchmarks/go/flood runs an unauthenticated flood
  (4 workers, `--flood-conn-rate` connections/s: `connect` = connect and close, `hello` = 100 bytes of a
  ClientHello then a reset): honest lookups that failed.
Targets (design.md): sequential p50 <= 1.2x and p99 <= 2x the Go provider's; at 200 lookups/s no error
and p99 under 50 ms; no honest failure under either flood.

Secondary (`throughput`, skipped by `--headline-only`): benchmarks/go/loadgen closed loop, 8 workers,
`newconn` (a new connection per request, `Connection: close`) and `keepalive`, against `python`, the
watch-cache path (`python-watch-cache`, cache filled with `install_list`, no kube-apiserver), the Go
provider and a Go TLS echo (`go-echo`, the physical limit), plus granian candidates (`--candidates`);
then a matrix of JobSet counts x keys per request, start-up time and RSS.

    python -m benchmarks.provider_load [--rounds 3] [--headline-only] [--compare-ref main]
    python -m benchmarks.provider_load --quick          # a short smoke run
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import write_result
from benchmarks.provider_servers import (
    CLIENT_CPU,
    LOOPBACK,
    Server,
    ensure_go_binaries,
    go_version,
    loadgen_command,
    machine_load,
    make_pki,
    start_servers,
    write_bodies,
    write_data,
    write_keys,
)

TARGETS = {
    "sequential_p50_ratio_to_go": 1.2,
    "sequential_p99_ratio_to_go": 2.0,
    "open_loop_200_p99_ms": 50.0,
    "open_loop_200_errors": 0,
    "flood_honest_failures": 0,
    "rss_mib_10k": 100.0,
    "rss_mib_100k": 400.0,
    "objects_first_answer_s_100k": 5.0,
}
ANCHOR = "go-provider"
SPEC_TIMEOUT = 2
"""Seconds: the Provider's spec.timeout as `trainer-policy certs --provider-yaml` writes it."""


def spread(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3), "max": round(max(values), 3)}


# ---------------------------------------------------------------------------- Gatekeeper's client
def gkclient(server: Server, bins: Path, pki: Path, keys: Path, *args: str) -> dict[str, Any]:
    """One gkclient run against `server`, with the server's CPU time per lookup."""
    cpu_before = server.cpu_seconds()
    out = subprocess.run(
        [
            "taskset",
            "-c",
            CLIENT_CPU,
            str(bins / "gkclient"),
            *("-url", f"https://{LOOPBACK}:{server.port}/", "-timeout", str(SPEC_TIMEOUT)),
            *("-ca", str(pki / "ca.crt"), "-cert", str(pki / "client.crt"), "-key", str(pki / "client.key")),
            *("-keys", str(keys), *args),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    result["server_cpu_us_per_lookup"] = round((server.cpu_seconds() - cpu_before) / max(result["lookups"], 1) * 1e6)
    return result


def flooded(server: Server, bins: Path, pki: Path, keys: Path, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """The open loop at `--flood-rate` while benchmarks/go/flood runs `mode` against the same port."""
    seconds = args.open_seconds
    flood = subprocess.Popen(
        [
            "taskset",
            "-c",
            CLIENT_CPU,
            str(bins / "flood"),
            *("-addr", f"{LOOPBACK}:{server.port}", "-mode", mode, "-workers", "4"),
            *("-rate", str(args.flood_conn_rate), "-duration", f"{seconds + 1}s"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        honest = gkclient(
            server, bins, pki, keys, "-mode", "open", "-rate", str(args.flood_rate), "-duration", f"{seconds}s"
        )
    finally:
        stdout, _ = flood.communicate(timeout=seconds + 60)
    return {"honest": honest, "flood": json.loads(stdout)}


def gatekeeper_client(servers: list[Server], bins: Path, pki: Path, keys: Path, args: argparse.Namespace):
    names = [s.name for s in servers]
    sequential: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    open_loop: dict[str, dict[str, list[dict[str, Any]]]] = {str(r): {n: [] for n in names} for r in args.rates}
    flood: dict[str, dict[str, list[dict[str, Any]]]] = {m: {n: [] for n in names} for m in args.floods}
    for round_number in range(args.rounds):
        print(f"gatekeeper client, round {round_number + 1}/{args.rounds} ...", flush=True)
        for server in servers:
            sequential[server.name].append(gkclient(server, bins, pki, keys, "-lookups", str(args.lookups)))
        for rate in args.rates:
            for server in servers:
                run = gkclient(
                    server, bins, pki, keys, "-mode", "open", "-rate", str(rate), "-duration", f"{args.open_seconds}s"
                )
                open_loop[str(rate)][server.name].append(run)
        for mode in args.floods:
            for server in servers:
                flood[mode][server.name].append(flooded(server, bins, pki, keys, mode, args))
    return {
        "sequential": summarize_sequential(sequential),
        "open_loop": {rate: summarize_open(runs) for rate, runs in open_loop.items()},
        "flood": {mode: summarize_flood(runs) for mode, runs in flood.items()},
    }


def summarize_sequential(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    servers = {
        name: {
            "p50_ms": spread([r["latency_ms"]["p50"] for r in rounds]),
            "p99_ms": spread([r["latency_ms"]["p99"] for r in rounds]),
            "after_handshake_p50_ms": spread([r["after_handshake_ms"]["p50"] for r in rounds]),
            "after_handshake_p99_ms": spread([r["after_handshake_ms"]["p99"] for r in rounds]),
            "server_cpu_us_per_lookup": spread([r["server_cpu_us_per_lookup"] for r in rounds]),
            "errors": sum(r["errors"] for r in rounds),
            "error_samples": [e for r in rounds for e in r.get("error_samples", [])][:3],
            "lookups_per_round": rounds[0]["lookups"],
        }
        for name, rounds in runs.items()
    }
    ratios = {
        f"{name}/{ANCHOR}": {
            stat: spread(
                [a["latency_ms"][stat] / b["latency_ms"][stat] for a, b in zip(rounds, runs[ANCHOR], strict=True)]
            )
            for stat in ("p50", "p99")
        }
        for name, rounds in runs.items()
        if name != ANCHOR and ANCHOR in runs
    }
    return {"servers": servers, "ratios_per_round": ratios}


def summarize_open(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        name: {
            "lookups": sum(r["lookups"] for r in rounds),
            "errors": sum(r["errors"] for r in rounds),
            "error_samples": [e for r in rounds for e in r.get("error_samples", [])][:3],
            "p50_ms": spread([r["latency_ms"]["p50"] for r in rounds]),
            "p99_ms": spread([r["latency_ms"]["p99"] for r in rounds]),
            "max_ms": max(r["latency_ms"]["max"] for r in rounds),
            "server_cpu_us_per_lookup": spread([r["server_cpu_us_per_lookup"] for r in rounds]),
        }
        for name, rounds in runs.items()
    }


def summarize_flood(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out = summarize_open({name: [r["honest"] for r in rounds] for name, rounds in runs.items()})
    for name, rounds in runs.items():
        out[name]["flood_connections_per_s"] = spread([r["flood"]["per_second"] for r in rounds])
    return out


# ------------------------------------------------------------------------------ secondary: throughput
def closed_loop(server: Server, bins: Path, pki: Path, bodies: Path, mode: str, seconds: float) -> dict[str, Any]:
    cpu_before = server.cpu_seconds()
    out = subprocess.run(
        [
            "taskset",
            "-c",
            CLIENT_CPU,
            *loadgen_command(bins, server.port, pki, bodies, mode, seconds, check=server.name != "go-echo"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    result = json.loads(out.stdout)
    cpu = server.cpu_seconds() - cpu_before
    result["requests_per_s"] = round(result["requests"] / result["seconds"], 1)
    result["server_cpu_us_per_request"] = round(cpu / max(result["requests"], 1) * 1e6, 1)
    result["server_cpu_share"] = round(cpu / result["seconds"], 3)
    return result


def compare(servers: list[Server], mode: str, rounds: int, bins: Path, pki: Path, bodies: Path, seconds: float):
    per_server: dict[str, list[dict[str, Any]]] = {s.name: [] for s in servers}
    for _ in range(rounds):
        for server in servers:
            per_server[server.name].append(closed_loop(server, bins, pki, bodies, mode, seconds))
    summary: dict[str, Any] = {}
    for server in servers:
        runs = per_server[server.name]
        summary[server.name] = {
            "requests_per_s_by_round": [r["requests_per_s"] for r in runs],
            "requests_per_s": spread([r["requests_per_s"] for r in runs]),
            "p50_ms": spread([r["p50_ms"] for r in runs]),
            "p99_ms": spread([r["p99_ms"] for r in runs]),
            "server_cpu_us_per_request": spread([r["server_cpu_us_per_request"] for r in runs]),
            "errors": sum(r["errors"] for r in runs),
            "responses_with_key_errors": sum(r["key_errors"] for r in runs),
            "first_error": next((r.get("first_error") for r in runs if r.get("first_error")), None),
            **server.memory(),
        }
    ratios: dict[str, Any] = {}
    for anchor in (ANCHOR, "go-echo"):
        if anchor not in per_server:
            continue
        for server in servers:
            if server.name.startswith(("python", "granian")):
                mine, theirs = per_server[server.name], per_server[anchor]
                ratios[f"{server.name}/{anchor}"] = {
                    "requests_per_s": spread(
                        [a["requests_per_s"] / b["requests_per_s"] for a, b in zip(mine, theirs, strict=True)]
                    ),
                    "p99": spread([a["p99_ms"] / max(b["p99_ms"], 0.001) for a, b in zip(mine, theirs, strict=True)]),
                }
    return {"servers": summary, "ratios_per_round": ratios}


def throughput(args: argparse.Namespace, work: Path, pki: Path, bins: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"closed_loop": {}, "matrix": [], "startup": []}
    data, keys = write_data(work, 10_000)
    bodies = write_bodies(work, keys, 10, "10000")
    names = ["python", *(f"granian-{interface}" for interface in args.candidates), "python-watch-cache", ANCHOR]
    servers = start_servers([*names, "go-echo"], data, pki, bins, work, None)
    try:
        for mode in ("newconn", "keepalive"):
            print(f"throughput {mode} ...", flush=True)
            result["closed_loop"][mode] = compare(servers, mode, args.rounds, bins, pki, bodies, args.seconds)
    finally:
        for server in servers:
            server.stop()
    for size in args.sizes:
        data, keys = write_data(work, size)
        servers = start_servers(["python", "python-watch-cache", ANCHOR], data, pki, bins, work, None)
        try:
            result["startup"].append(
                {"jobsets": size, **{s.name: {"first_answer_s": s.first_answer_s, **s.memory()} for s in servers}}
            )
            for batch in args.batches:
                bodies = write_bodies(work, keys, batch, str(size))
                for mode in ("newconn", "keepalive"):
                    print(f"matrix {size} jobsets, {batch} keys, {mode} ...", flush=True)
                    row = compare(servers, mode, 1, bins, pki, bodies, args.matrix_seconds)
                    result["matrix"].append({"jobsets": size, "keys_per_request": batch, "mode": mode, **row})
        finally:
            for server in servers:
                server.stop()
    return result


# ------------------------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> dict[str, Any]:
    bins = ensure_go_binaries()
    load_before = machine_load()
    work = Path(tempfile.mkdtemp(prefix="ktp-provider-bench-"))
    pki = make_pki(work)
    result: dict[str, Any] = {}
    try:
        data, keys = write_data(work, 10_000)
        key_file = write_keys(work, keys, 10, "10000")
        names = ["python"]
        if args.compare_ref:
            names.append(f"python-at-{args.compare_ref}")
        servers = start_servers([*names, ANCHOR], data, pki, bins, work, args.compare_ref)
        try:
            result["gatekeeper_client"] = gatekeeper_client(servers, bins, pki, key_file, args)
        finally:
            for server in servers:
                server.stop()
        if not args.headline_only:
            result["throughput"] = throughput(args, work, pki, bins)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["setup"] = {
        "machine_note": "2 cores shared with other engineers' work: compare within this run, not absolute figures",
        "machine_load": {"before": load_before, "after": machine_load()},
        "server_cpu": "0 (taskset)",
        "client_cpu": CLIENT_CPU,
        "jobsets": 10_000,
        "keys_per_lookup": 10,
        "rounds": args.rounds,
        "sequential_lookups_per_round": args.lookups,
        "open_loop_rates_per_s": args.rates,
        "open_loop_seconds": args.open_seconds,
        "flood": {
            "modes": args.floods,
            "connections_per_s": args.flood_conn_rate,
            "workers": 4,
            "honest_rate": args.flood_rate,
        },
        "client": "benchmarks/go/gkclient: Gatekeeper v3.20's external data client (frameworks request.go)",
        "tls": "TLS 1.3, mTLS (client certificate) on every server",
        "go": go_version(),
        "compare_ref": args.compare_ref,
    }
    result["targets"] = TARGETS
    result["met"] = verdict(result)
    return result


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    head = result["gatekeeper_client"]
    ratios = head["sequential"]["ratios_per_round"][f"python/{ANCHOR}"]
    met: dict[str, Any] = {
        "sequential_p50_ratio_to_go": {
            "median": ratios["p50"]["median"],
            "met": ratios["p50"]["median"] <= TARGETS["sequential_p50_ratio_to_go"],
        },
        "sequential_p99_ratio_to_go": {
            "median": ratios["p99"]["median"],
            "met": ratios["p99"]["median"] <= TARGETS["sequential_p99_ratio_to_go"],
        },
    }
    if "200" in head["open_loop"]:
        at200 = head["open_loop"]["200"]["python"]
        met["open_loop_200"] = {
            "errors": at200["errors"],
            "p99_ms": at200["p99_ms"],
            "met": at200["errors"] == 0 and at200["p99_ms"]["median"] < TARGETS["open_loop_200_p99_ms"],
        }
    if head["flood"]:
        failures = {mode: runs["python"]["errors"] for mode, runs in head["flood"].items()}
        met["flood_honest_failures"] = {"by_flood": failures, "met": sum(failures.values()) == 0}
    for row in result.get("throughput", {}).get("startup", []):
        size, python = row["jobsets"], row["python"]
        if size == 10_000:
            met["rss_mib_10k"] = {"python": python["rss_mib"], "met": python["rss_mib"] < TARGETS["rss_mib_10k"]}
        if size == 100_000:
            met["rss_mib_100k"] = {"python": python["rss_mib"], "met": python["rss_mib"] < TARGETS["rss_mib_100k"]}
            first = python["first_answer_s"]
            met["objects_first_answer_s_100k"] = {"s": first, "met": first < TARGETS["objects_first_answer_s_100k"]}
    return met


def report(result: dict[str, Any]) -> None:
    head = result["gatekeeper_client"]
    print("== Gatekeeper's client, sequential (10k JobSets, 10 keys; medians of rounds)")
    for name, s in head["sequential"]["servers"].items():
        print(
            f"  {name:24} p50 {s['p50_ms']['median']:7.2f} ms  p99 {s['p99_ms']['median']:7.2f} ms  "
            f"after handshake p50 {s['after_handshake_p50_ms']['median']:6.2f} ms  "
            f"cpu/lookup {s['server_cpu_us_per_lookup']['median']:.0f} us  errors {s['errors']}"
        )
    for name, r in head["sequential"]["ratios_per_round"].items():
        print(f"  ratio {name:34} p50 {r['p50']}  p99 {r['p99']}")
    for label, block in [
        *((f"open loop {r}/s", b) for r, b in head["open_loop"].items()),
        *((f"{m} flood", b) for m, b in head["flood"].items()),
    ]:
        print(f"== {label}")
        for name, s in block.items():
            print(
                f"  {name:24} errors {s['errors']:4}/{s['lookups']:<6} p50 {s['p50_ms']['median']:7.2f} ms  "
                f"p99 {s['p99_ms']['median']:8.2f} ms (max round {s['p99_ms']['max']:.2f})"
            )
    for mode, block in result.get("throughput", {}).get("closed_loop", {}).items():
        print(f"== throughput, closed loop {mode}")
        for name, s in block["servers"].items():
            rate, cpu = s["requests_per_s"]["median"], s["server_cpu_us_per_request"]["median"]
            print(f"  {name:24} {rate:>9.0f} req/s  cpu/req {cpu:.0f} us  rss {s['rss_mib']} MiB")
    print(f"targets: {json.dumps(result['met'])}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--lookups", type=int, default=300, help="sequential lookups per server per round")
    parser.add_argument("--rates", type=int, nargs="*", default=[10, 50, 100, 200], help="open-loop lookups/s")
    parser.add_argument("--open-seconds", type=float, default=8.0, help="seconds per open-loop run")
    parser.add_argument("--floods", nargs="*", default=["connect", "hello"], choices=["connect", "hello"])
    parser.add_argument("--flood-conn-rate", type=int, default=1900, help="flood connections/s (4 workers)")
    parser.add_argument("--flood-rate", type=int, default=50, help="honest lookups/s during a flood")
    parser.add_argument("--compare-ref", default="main", help="git ref of the previous server to include ('' skips)")
    parser.add_argument("--headline-only", action="store_true", help="skip the throughput section")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per server per closed-loop round")
    parser.add_argument("--matrix-seconds", type=float, default=2.0, help="seconds per matrix cell")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument(
        "--candidates", nargs="*", default=[], choices=["wsgi", "rsgi"], help="granian interfaces (throughput only)"
    )
    parser.add_argument("--output", default="provider_load", help="result name under benchmarks/results/")
    parser.add_argument("--quick", action="store_true", help="1 round, short runs, sizes 1k/10k, batch 10")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.lookups, args.open_seconds = 1, 100, 3.0
        args.seconds, args.matrix_seconds, args.sizes, args.batches = 2.0, 1.0, [1_000, 10_000], [10]
    result = run(args)
    path = write_result(args.output, result)
    report(result)
    print(f"-> {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
