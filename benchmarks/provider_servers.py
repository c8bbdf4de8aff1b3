"""The servers, data and tools the provider benchmarks share (provider_load, provider_instructions,
granian_guarantees): the Go anchors and clients built from benchmarks/go with Gatekeeper's Go, test PKI,
JobSet data, and server processes pinned to one core.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"kubeflow_trainer_policy": "generator", "kubeflow_trainer_policy_provider": "provider"}
"""Import name -> the top-level folder that holds it (generator/kubeflow_trainer_policy/; before the src layout,
the folder itself was the package)."""
GO_SOURCES = Path(__file__).resolve().parent / "go"
GO_BIN = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kubeflow-trainer-policy" / "bench-go"
LOOPBACK = "127.0.0.1"
SERVER_CPU, CLIENT_CPU = "0", "1"
GO_PROGRAMS = ("gkclient", "flood", "provider", "echo", "loadgen")


# ----------------------------------------------------------------------------------- tools
def go_command_path() -> str:
    """A Go >= 1.24 toolchain, Gatekeeper's (benchmarks/go/ensure-go.sh fetches Debian's when none is on PATH)."""
    found = subprocess.run([str(GO_SOURCES / "ensure-go.sh")], capture_output=True, text=True)
    if found.returncode != 0:
        raise RuntimeError(f"benchmarks/go/ensure-go.sh failed: {found.stderr.strip()[-500:]}")
    return found.stdout.strip()


def ensure_go_binaries() -> Path:
    """Build Gatekeeper's client, the Go anchors and the closed-loop load generator."""
    go = go_command_path()
    GO_BIN.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GOCACHE": str(GO_BIN / "cache"),
        "GOFLAGS": "-mod=mod",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
    }
    for name in GO_PROGRAMS:
        subprocess.run([go, "build", "-o", str(GO_BIN / name), f"./{name}"], cwd=GO_SOURCES, env=env, check=True)
    return GO_BIN


def go_version() -> str:
    return subprocess.run([go_command_path(), "version"], capture_output=True, text=True).stdout.strip()


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


def key_batches(keys: list[str], batch: int) -> list[list[str]]:
    """500 lookups' keys: `batch` keys each, about one in eleven for a JobSet that does not exist."""
    rng = random.Random(7)
    pool = keys + [f"bench-0/missing-{i}" for i in range(max(1, len(keys) // 10))]
    return [rng.sample(pool, batch) for _ in range(500)]


def write_keys(directory: Path, keys: list[str], batch: int, tag: str) -> Path:
    """The key lists for gkclient (JSON array of key lists)."""
    path = directory / f"keys-{tag}-{batch}.json"
    path.write_text(json.dumps(key_batches(keys, batch)))
    return path


def write_bodies(directory: Path, keys: list[str], batch: int, tag: str) -> Path:
    """The same lookups as ProviderRequest bodies for loadgen (JSON array of strings)."""
    bodies = [
        json.dumps(
            {"apiVersion": "externaldata.gatekeeper.sh/v1beta1", "kind": "ProviderRequest", "request": {"keys": k}}
        )
        for k in key_batches(keys, batch)
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


def python_command(data: Path, port: int, pki: Path, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *serve_args(port, pki), *extra]
    return [*command, "--objects", str(data)]


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
    installed packages' names (FOLDERS): on PYTHONPATH it comes before the editable install of
    the working tree, which would otherwise answer those imports."""
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


def loadgen_command(bins: Path, port: int, pki: Path, bodies: Path, mode: str, seconds: float, check: bool = True):
    """benchmarks/go/loadgen against 127.0.0.1:`port` with the client certificate, for `seconds`."""
    return [
        str(bins / "loadgen"),
        *("-addr", f"{LOOPBACK}:{port}", "-mode", mode),
        *("-ca", str(pki / "ca.crt"), "-cert", str(pki / "client.crt"), "-key", str(pki / "client.key")),
        *("-bodies", str(bodies), "-duration", f"{seconds}s", f"-check={str(check).lower()}"),
    ]
