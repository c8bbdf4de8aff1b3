"""Load benchmark of the external data provider against Go anchors measured in the same run.

Servers (each its own process, pinned to CPU 0 with taskset; all TLS 1.3 with mTLS, same certificates):
- `python`: `trainer-policy provider serve --objects DATA.json` (the offline path);
- `python-watch-cache`: the provider over its watch-cache source (KubeJobSetSource), the cache filled
  directly from the same data with `install_list` (what a completed list does; no kube-apiserver, so
  100k JobSets fit in a run);
- `python-at-<ref>`: the provider as of git `--compare-ref` (default main: a regression check of the working
  tree against it; the ref of the old http.server threads stack shows that comparison), 10k only;
- `go-provider`: benchmarks/go/provider, a stdlib Go provider with the same request/response/value;
- `go-echo`: benchmarks/go/echo, a stdlib Go TLS 1.3 HTTP echo: the physical limit;
- candidates (`--candidates`, headline only): `granian-wsgi` and `granian-rsgi`, the provider's handler
  served by granian (hyper + rustls) through benchmarks/granian_provider.py, one worker.
Load: benchmarks/go/loadgen (compiled, pinned to CPU 1), closed loop, 8 workers: `newconn` opens a
new TCP + TLS 1.3 connection with the client certificate per lookup (Gatekeeper's pattern; the
request says `Connection: close` so every server closes after its answer) and `keepalive` keeps
one connection per worker. Servers are measured in alternating rounds so each sees the same machine
load; ratios are per round (min/median/max). Server CPU per request is the server process's
utime+stime over the round (with its child processes: granian serves from a worker process), RSS that
of the process tree. Results: benchmarks/results/provider_load.json (`--output` names another file).

    python -m benchmarks.provider_load [--quick] [--rounds 3] [--seconds 4] [--compare-ref main]
    python -m benchmarks.provider_load --headline-only --candidates wsgi rsgi \
        --compare-ref '' --output provider_stack_choice     # the stack comparison http_server.py cites
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from benchmarks.common import write_result

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"kubeflow_trainer_policy": "generator", "kubeflow_trainer_policy_provider": "provider"}
"""Import name -> the top-level folder that holds it (generator/kubeflow_trainer_policy/; before the src layout,
the folder itself was the package)."""
GO_SOURCES = Path(__file__).resolve().parent / "go"
GO_BIN = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kubeflow-trainer-policy" / "bench-go"
LOOPBACK = "127.0.0.1"
SERVER_CPU, CLIENT_CPU = "0", "1"
TARGETS = {
    "newconn_lookups_ratio_to_go": 0.8,
    "keepalive_ratio_to_go": 0.8,
    "p99_ratio_to_go": 2.0,
    "rss_mib_10k": 100.0,
    "rss_mib_100k": 400.0,
    "objects_first_answer_s_100k": 5.0,
}


# ----------------------------------------------------------------------------------- tools
def ensure_go_binaries() -> Path:
    """Build the Go anchors and load generator (Debian's golang-go; scripts/ensure-bench-tools.sh installs it)."""
    go = shutil.which("go")
    if go is None:
        subprocess.run([str(REPO / "scripts" / "ensure-bench-tools.sh")], check=True)
        go = shutil.which("go") or "/usr/bin/go"
    GO_BIN.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOCACHE": str(GO_BIN / "cache"), "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    for name in ("provider", "echo", "loadgen"):
        subprocess.run([go, "build", "-o", str(GO_BIN / name), f"./{name}"], cwd=GO_SOURCES, env=env, check=True)
    return GO_BIN


# ------------------------------------------------------------------------------------ data
def write_data(directory: Path, jobsets: int) -> tuple[Path, list[str]]:
    """A JSON List of JobSets over 20 namespaces, one in ten with an active replicated job."""
    items, keys = [], []
    for i in range(jobsets):
        namespace, name = f"bench-{i % 20}", f"job-{i}"
        keys.append(f"{namespace}/{name}")
        items.append(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{i}", "resourceVersion": str(i)},
                "spec": {"replicatedJobs": [{"name": "launcher", "replicas": 1}, {"name": "node", "replicas": 4}]},
                "status": {
                    "replicatedJobsStatus": [
                        {"name": "launcher", "active": 0, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0},
                        {"name": "node", "active": 4 if i % 10 == 0 else 0, "ready": 0, "succeeded": 0, "failed": 0},
                    ]
                },
            }
        )
    path = directory / f"jobsets-{jobsets}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path, keys


def write_bodies(directory: Path, keys: list[str], batch: int, tag: str) -> Path:
    rng = random.Random(7)
    pool = keys + [f"bench-0/missing-{i}" for i in range(max(1, len(keys) // 10))]
    bodies = [
        json.dumps(
            {
                "apiVersion": "externaldata.gatekeeper.sh/v1beta1",
                "kind": "ProviderRequest",
                "request": {"keys": rng.sample(pool, batch)},
            }
        )
        for _ in range(500)
    ]
    path = directory / f"bodies-{tag}-{batch}.json"
    path.write_text(json.dumps(bodies))
    return path


# ---------------------------------------------------------------------------------- servers
@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    started: float
    first_answer_s: float = 0.0
    rounds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def pids(self) -> list[int]:
        """The server process and its descendants (taskset execs in place; granian forks a worker)."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(parent, []).append(int(entry.name))
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    def cpu_seconds(self) -> float:
        ticks = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def memory(self) -> dict[str, float]:
        rss = peak = 0
        for pid in self.pids():
            try:
                text = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            status = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
            rss += int(status.get("VmRSS", "0 kB").split()[0])
            peak += int(status.get("VmHWM", "0 kB").split()[0])
        return {"rss_mib": round(rss / 1024, 1), "peak_rss_mib": round(peak / 1024, 1)}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def start_server(name: str, command: list[str], port: int, pki: Path, env: dict[str, str] | None = None) -> Server:
    started = time.monotonic()
    proc = subprocess.Popen(
        ["taskset", "-c", SERVER_CPU, *command], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = Server(name, proc, port, started)
    server.first_answer_s = wait_first_answer(server, pki)
    return server


def wait_first_answer(server: Server, pki: Path, timeout: float = 600) -> float:
    """Seconds from process start until a ProviderRequest is answered (200)."""
    session = requests.Session()
    session.trust_env, session.verify, session.cert = (
        False,
        str(pki / "ca.crt"),
        (
            str(pki / "client.crt"),
            str(pki / "client.key"),
        ),
    )
    body = {"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "ProviderRequest", "request": {"keys": []}}
    while time.monotonic() - server.started < timeout:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.proc.returncode}")
        try:
            if session.post(f"https://{LOOPBACK}:{server.port}/", json=body, timeout=2).status_code == 200:
                return round(time.monotonic() - server.started, 3)
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{server.name} did not answer within {timeout} s")


def python_command(data: Path, port: int, pki: Path) -> list[str]:
    return [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *serve_args(port, pki), "--objects", str(data)]


def serve_args(port: int, pki: Path) -> list[str]:
    return [
        "provider",
        "serve",
        "--listen",
        f"{LOOPBACK}:{port}",
        "--tls-cert",
        str(pki / "tls.crt"),
        "--tls-key",
        str(pki / "tls.key"),
        "--client-ca",
        str(pki / "client-ca.crt"),
        "--log-level",
        "error",
    ]


def granian_command(interface: str, port: int, pki: Path) -> list[str]:
    """granian serving benchmarks/granian_provider.py with the provider's certificates (TLS 1.3 is its minimum)."""
    return [
        sys.executable,
        "-m",
        "granian",
        "--interface",
        interface,
        "--http",
        "1",
        "--workers",
        "1",
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--ssl-certificate",
        str(pki / "tls.crt"),
        "--ssl-keyfile",
        str(pki / "tls.key"),
        "--ssl-protocol-min",
        "tls1.3",
        "--ssl-ca",
        str(pki / "client-ca.crt"),
        "--ssl-client-verify",
        "--log-level",
        "error",
        f"benchmarks.granian_provider:{interface}",
    ]


def go_command(binary: Path, port: int, pki: Path, data: Path | None) -> list[str]:
    command = [
        str(binary),
        "-listen",
        f"{LOOPBACK}:{port}",
        "-cert",
        str(pki / "tls.crt"),
        "-key",
        str(pki / "tls.key"),
    ]
    command += ["-client-ca", str(pki / "client-ca.crt")]
    return command + (["-objects", str(data)] if data else [])


def start_servers(
    names: list[str], data: Path, pki: Path, bins: Path, work: Path, compare_ref: str | None
) -> list[Server]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    servers = []
    for name in names:
        port = free_port()
        if name == "python":
            command = python_command(data, port, pki)
        elif name == "python-watch-cache":
            command = [sys.executable, "-m", "benchmarks.watch_cache_server", str(data), *serve_args(port, pki)[2:]]
        elif name.startswith("python-at-"):
            old = old_tree(work, compare_ref or "main")
            for package in FOLDERS:
                if not imported_from(old, package).is_relative_to(old.resolve()):
                    raise RuntimeError(f"{name}: {package} does not import from {old}")
            command = [
                sys.executable,
                "-m",
                "kubeflow_trainer_policy.cli.main",
                *serve_args(port, pki),
                "--objects",
                str(data),
            ]
            servers.append(start_server(name, command, port, pki, {**os.environ, "PYTHONPATH": str(old)}))
            continue
        elif name.startswith("granian-"):
            command = granian_command(name.removeprefix("granian-"), port, pki)
            servers.append(start_server(name, command, port, pki, {**env, "PROVIDER_BENCH_DATA": str(data)}))
            continue
        elif name == "go-provider":
            command = go_command(bins / "provider", port, pki, data)
        elif name == "go-echo":
            command = go_command(bins / "echo", port, pki, None)
        else:
            raise ValueError(name)
        servers.append(start_server(name, command, port, pki, env))
    return servers


def old_tree(work: Path, ref: str) -> Path:
    """The provider and CLI as of git `ref` (the previous stack), extracted once, importable under the
    installed packages' names (FOLDERS): on PYTHONPATH it comes before the editable install of the working
    tree, which would otherwise answer those imports."""
    target = work / f"old-{ref.replace('/', '_')}"
    if not target.exists():
        target.mkdir()
        archive = subprocess.run(["git", "archive", ref, *FOLDERS.values()], cwd=REPO, capture_output=True)
        archive.check_returncode()
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
        for package, folder in FOLDERS.items():
            inside = Path(folder) / package
            link = inside if (target / inside).is_dir() else Path(folder)
            (target / package).symlink_to(link, target_is_directory=True)
    return target


def imported_from(tree: Path, package: str) -> Path:
    """Where `package` is imported from with `tree` on PYTHONPATH (a check that a comparison compares)."""
    found = subprocess.run(
        [sys.executable, "-c", f"import {package}; print({package}.__file__)"],
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip()).resolve()


# ------------------------------------------------------------------------------------- load
def loadgen_command(bins: Path, port: int, pki: Path, bodies: Path, mode: str, seconds: float, check: bool = True):
    """benchmarks/go/loadgen against 127.0.0.1:`port` with the client certificate, for `seconds`."""
    return [
        str(bins / "loadgen"),
        *("-addr", f"{LOOPBACK}:{port}", "-mode", mode),
        *("-ca", str(pki / "ca.crt"), "-cert", str(pki / "client.crt"), "-key", str(pki / "client.key")),
        *("-bodies", str(bodies), "-duration", f"{seconds}s", f"-check={str(check).lower()}"),
    ]


def load(server: Server, bins: Path, pki: Path, bodies: Path, mode: str, seconds: float) -> dict[str, Any]:
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


def spread(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def compare(servers: list[Server], mode: str, rounds: int, bins: Path, pki: Path, bodies: Path, seconds: float):
    per_server: dict[str, list[dict[str, Any]]] = {s.name: [] for s in servers}
    for _ in range(rounds):
        for server in servers:
            per_server[server.name].append(load(server, bins, pki, bodies, mode, seconds))
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
    for anchor in ("go-provider", "go-echo"):
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


# -------------------------------------------------------------------------------------- run
def make_pki(directory: Path) -> Path:
    sys.path.insert(0, str(REPO))
    from kubeflow_trainer_policy_provider.certs import issue, make_ca

    ca, client_ca = make_ca("bench-ca"), make_ca("bench-client-ca")
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    (directory / "client-ca.crt").write_bytes(client_ca.cert_pem)
    issue(ca, "provider", [LOOPBACK]).write(directory / "tls.crt", directory / "tls.key")
    issue(client_ca, "gatekeeper", [], client=True).write(directory / "client.crt", directory / "client.key")
    return directory


def machine_load() -> dict[str, float]:
    """How busy the server's CPU is: microseconds for sum(range(1000)) pinned there (about 10 on an idle
    core of this class), and the 1-minute load average."""
    probe = "import timeit; print(timeit.timeit(lambda: sum(range(1000)), number=3000) / 3000 * 1e6)"
    out = subprocess.run(["taskset", "-c", SERVER_CPU, sys.executable, "-c", probe], capture_output=True, text=True)
    return {"sum_range_1000_us": round(float(out.stdout), 1), "loadavg_1m": os.getloadavg()[0]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    bins = ensure_go_binaries()
    load_before = machine_load()
    work = Path(tempfile.mkdtemp(prefix="ktp-provider-bench-"))
    pki = make_pki(work)
    result: dict[str, Any] = {"headline": {}, "matrix": [], "startup": []}
    try:
        # Headline: 10k JobSets, 10-key batches, every server, both connection patterns.
        data, keys = write_data(work, 10_000)
        bodies = write_bodies(work, keys, 10, "10000")
        names = ["python", "python-watch-cache", "go-provider", "go-echo"]
        if args.compare_ref:
            names.insert(2, f"python-at-{args.compare_ref}")
        names[2:2] = [f"granian-{interface}" for interface in args.candidates]
        servers = start_servers(names, data, pki, bins, work, args.compare_ref)
        try:
            for mode in ("newconn", "keepalive"):
                print(f"headline {mode} ...", flush=True)
                result["headline"][mode] = compare(servers, mode, args.rounds, bins, pki, bodies, args.seconds)
        finally:
            for server in servers:
                server.stop()
        # Matrix: sizes x batches, provider on both paths against the Go provider, one round each.
        for size in [] if args.headline_only else args.sizes:
            data, keys = write_data(work, size)
            servers = start_servers(["python", "python-watch-cache", "go-provider"], data, pki, bins, work, None)
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
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["setup"] = {
        "machine_note": "2 cores shared with other agents' work: compare ratios within this run, not absolute figures",
        "machine_load": {"before": load_before, "after": machine_load()},
        "server_cpu": SERVER_CPU,
        "client_cpu": CLIENT_CPU,
        "rounds": args.rounds,
        "seconds_per_round": args.seconds,
        "matrix_seconds": args.matrix_seconds,
        "workers": 8,
        "tls": "TLS 1.3, mTLS (client certificate) on every server",
        "watch_cache_fed_by": "install_list from the same JSON (no kube-apiserver)",
        "go": subprocess.run(["go", "version"], capture_output=True, text=True).stdout.strip(),
        "candidates": args.candidates,
    }
    result["targets"] = TARGETS
    result["met"] = verdict(result)
    return result


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    head = result["headline"]
    met: dict[str, Any] = {}
    for mode, key in (("newconn", "newconn_lookups_ratio_to_go"), ("keepalive", "keepalive_ratio_to_go")):
        ratio = head[mode]["ratios_per_round"]["python/go-provider"]
        met[key] = {
            "median": ratio["requests_per_s"]["median"],
            "met": ratio["requests_per_s"]["median"] >= TARGETS[key],
        }
        met[f"{mode}_p99_ratio_to_go"] = {"median": ratio["p99"]["median"], "met": ratio["p99"]["median"] <= 2.0}
    for row in result["startup"]:
        size, python = row["jobsets"], row["python"]
        if size == 10_000:
            met["rss_mib_10k"] = {"python": python["rss_mib"], "met": python["rss_mib"] < TARGETS["rss_mib_10k"]}
        if size == 100_000:
            met["rss_mib_100k"] = {"python": python["rss_mib"], "met": python["rss_mib"] < TARGETS["rss_mib_100k"]}
            first = python["first_answer_s"]
            met["objects_first_answer_s_100k"] = {"s": first, "met": first < TARGETS["objects_first_answer_s_100k"]}
    return met


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the headline (default 3)")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per server per headline round")
    parser.add_argument("--matrix-seconds", type=float, default=2.0, help="seconds per matrix cell")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--compare-ref", default="main", help="git ref of the previous server to include ('' skips)")
    parser.add_argument(
        "--candidates",
        nargs="*",
        default=[],
        choices=["wsgi", "rsgi"],
        help="granian interfaces to add to the headline as candidate stacks (granian-wsgi, granian-rsgi)",
    )
    parser.add_argument("--headline-only", action="store_true", help="skip the sizes x batches matrix")
    parser.add_argument("--output", default="provider_load", help="result name under benchmarks/results/")
    parser.add_argument("--quick", action="store_true", help="1 round, 1 s cells, sizes 1k/10k, batch 10")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.matrix_seconds, args.sizes, args.batches = 1, 2.0, 1.0, [1_000, 10_000], [10]
    result = run(args)
    path = write_result(args.output, result)
    for mode, block in result["headline"].items():
        print(f"== {mode} (10k JobSets, 10 keys)")
        for name, s in block["servers"].items():
            print(
                f"  {name:28} {s['requests_per_s']['median']:>9.0f} req/s  p50 {s['p50_ms']['median']:.2f} ms  "
                f"p99 {s['p99_ms']['median']:.2f} ms  cpu/req {s['server_cpu_us_per_request']['median']:.0f} us  "
                f"rss {s['rss_mib']} MiB  errors {s['errors']}"
            )
        for name, r in block["ratios_per_round"].items():
            print(f"  ratio {name:40} req/s {r['requests_per_s']}  p99 {r['p99']}")
    print(f"targets: {json.dumps(result['met'])}\n-> {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
