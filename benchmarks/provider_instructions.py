"""Instructions the provider's process runs per lookup: a figure the machine's load cannot move.

provider_load measures time, which on a shared 2-core VM moves with everything else running. Here the
provider (`provider serve --objects DATA`: the working tree, and the provider at git `--compare-ref` if
given) runs under valgrind's callgrind with instrumentation off; it is switched on (`callgrind_control -i
on`) only while the load runs, then the counts are dumped and divided by the lookups answered:
- `gatekeeper`: benchmarks/go/gkclient makes `--lookups` sequential 10-key lookups exactly as Gatekeeper's
  client does (a new TLS 1.3 mTLS connection each, offering X25519MLKEM768 and X25519 as Go 1.24 does);
- `keepalive`: benchmarks/go/loadgen sends 10-key requests on 2 kept connections for `--seconds`.
Start-up, the readiness probe and shutdown are not counted. The callgrind files are kept under `--keep DIR`
for `callgrind_annotate` (the profile behind the figures). Needs valgrind (Debian's `valgrind`).

    python -m benchmarks.provider_instructions [--lookups 300] [--seconds 20] [--compare-ref REF] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_result
from benchmarks.provider_servers import (
    LOOPBACK,
    Server,
    ensure_go_binaries,
    free_port,
    loadgen_command,
    make_pki,
    old_tree,
    serve_args,
    wait_first_answer,
    write_bodies,
    write_data,
    write_keys,
)

MODES = ("gatekeeper", "keepalive")
RELAXED = ["--handshake-timeout", "60", "--read-timeout", "60", "--idle-timeout", "60", "--request-timeout", "60"]
"""Under valgrind the server runs ~50x slower: its deadlines must not close the clients' connections."""


def counted_instructions(dumps: list[Path]) -> int:
    """The largest `totals:` of callgrind's dumps (the one written while instrumentation was on)."""
    found = 0
    for dump in dumps:
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("totals:", "summary:")):
                found = max(found, int(line.split()[1]))
    return found


def load_command(mode: str, bins: Path, port: int, pki: Path, work: Path, args: argparse.Namespace) -> list[str]:
    if mode == "gatekeeper":
        return [
            str(bins / "gkclient"),
            *("-url", f"https://{LOOPBACK}:{port}/", "-timeout", "60", "-lookups", str(args.lookups)),
            *("-ca", str(pki / "ca.crt"), "-cert", str(pki / "client.crt"), "-key", str(pki / "client.key")),
            *("-keys", str(work / "keys-instructions-10.json")),
        ]
    bodies = work / "bodies-instructions-10.json"
    return [*loadgen_command(bins, port, pki, bodies, mode, args.seconds), "-workers", "2"]


def measure(name: str, mode: str, data: Path, pki: Path, bins: Path, work: Path, args: argparse.Namespace):
    """Instructions per request of the provider `name` ('python', or 'python-at-<ref>') under `mode`'s load."""
    port = free_port()
    out = work / f"callgrind-{name}-{mode}"
    env = None
    if name != "python":
        old = old_tree(work, args.compare_ref)
        env = {**os.environ, "PYTHONPATH": str(old)}
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "kubeflow_trainer_policy.cli.main",
        *serve_args(port, pki),
        *RELAXED,
        "--objects",
        str(data),
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    server = Server(name, proc, port, time.monotonic())
    try:
        wait_first_answer(server, pki, timeout=900)
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
        load = subprocess.run(
            load_command(mode, bins, port, pki, work, args),
            capture_output=True,
            text=True,
            check=True,
            timeout=args.seconds + 900,
        )
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    answered = json.loads(load.stdout)
    count = answered["lookups"] if mode == "gatekeeper" else answered["requests"]
    if answered["errors"] or not count:
        raise RuntimeError(f"{name}/{mode}: {answered['errors']} errors in {count} requests")
    dumps = sorted(work.glob(f"{out.name}*"))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        for dump in dumps:
            shutil.copy(dump, args.keep / dump.name)
    return {"requests": count, "instructions_per_request": round(counted_instructions(dumps) / count)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lookups", type=int, default=300, help="Gatekeeper lookups per library")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of keep-alive load per library")
    parser.add_argument("--jobsets", type=int, default=10_000, help="JobSets the provider serves")
    parser.add_argument("--compare-ref", default="", help="also count the provider at this git ref")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--keep", type=Path, help="copy the callgrind files here")
    parser.add_argument("--output", default="provider_instructions", help="result name under benchmarks/results/")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"provider_instructions: {tool} not found (Debian package valgrind)")
    bins = ensure_go_binaries()
    names = ["python", *([f"python-at-{args.compare_ref}"] if args.compare_ref else [])]
    results: dict[str, dict[str, Any]] = {name: {} for name in names}
    with tempfile.TemporaryDirectory(prefix="ktp-instructions-") as directory:
        work = Path(directory)
        pki = make_pki(work)
        data, keys = write_data(work, args.jobsets)
        write_bodies(work, keys, 10, "instructions")
        write_keys(work, keys, 10, "instructions")
        for mode in args.modes:
            for name in names:
                print(f"{name} {mode} ...", flush=True)
                results[name][mode] = measure(name, mode, data, pki, bins, work, args)
    ratios = {
        f"python/{name}": {
            mode: round(
                results["python"][mode]["instructions_per_request"] / results[name][mode]["instructions_per_request"],
                3,
            )
            for mode in args.modes
        }
        for name in names[1:]
    }
    path = write_result(
        args.output,
        {
            "results": results,
            "ratios": ratios,
            "setup": {
                "what": "instructions (callgrind Ir) of the provider's process per answered request, load only",
                "jobsets": args.jobsets,
                "keys_per_request": 10,
                "gatekeeper_lookups": args.lookups,
                "keepalive_seconds": args.seconds,
                "load": {
                    "gatekeeper": "benchmarks/go/gkclient, sequential, a new connection per lookup",
                    "keepalive": "benchmarks/go/loadgen -mode keepalive, 2 workers",
                },
                "compare_ref": args.compare_ref,
            },
        },
    )
    for name in names:
        for mode in args.modes:
            print(f"  {name:16} {mode:10} {results[name][mode]}")
    print(f"  ratios {ratios}")
    print(f"-> {path}")


if __name__ == "__main__":
    main()
