"""Instructions the provider's process runs per lookup, by TLS library: a figure the machine's load cannot move.

provider_load and tls_handshake measure time, which on a shared 2-core VM moves with everything else running
(one run of tls_handshake could not tell OpenSSL 4.0 from 3.0; instruction counts showed 27% between them).
Here each server runs `provider serve --tls-library LIB --objects DATA` under valgrind's callgrind with
instrumentation off; it is switched on (`callgrind_control -i on`) only while benchmarks/go/loadgen sends
10-key ProviderRequests for `--seconds` (2 workers, a new mTLS connection per lookup or keep-alive), then
the counts are dumped and divided by the requests answered. Baseline: the stdlib library, in the same run.
Start-up, the readiness probe and shutdown are not counted. Needs valgrind (Debian's `valgrind`).

    python -m benchmarks.provider_instructions [--seconds 20] [--jobsets 10000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_result
from benchmarks.provider_load import (
    Server,
    ensure_go_binaries,
    free_port,
    loadgen_command,
    make_pki,
    serve_args,
    wait_first_answer,
    write_bodies,
    write_data,
)

LIBRARIES = ("stdlib", "bundled")
MODES = ("newconn", "keepalive")
RELAXED = ["--handshake-timeout", "60", "--read-timeout", "60", "--idle-timeout", "60", "--request-timeout", "60"]
"""Under valgrind the server runs ~50x slower: its deadlines must not close the load generator's connections."""


def counted_instructions(dumps: list[Path]) -> int:
    """The largest `totals:` of callgrind's dumps (the one written while instrumentation was on)."""
    found = 0
    for dump in dumps:
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("totals:", "summary:")):
                found = max(found, int(line.split()[1]))
    return found


def measure(library: str, mode: str, data: Path, pki: Path, bins: Path, bodies: Path, seconds: float, work: Path):
    port = free_port()
    out = work / f"callgrind-{library}-{mode}"
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
        "--tls-library",
        library,
        "--objects",
        str(data),
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(f"python-{library}", proc, port, time.monotonic())
    try:
        wait_first_answer(server, pki, timeout=900)
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
        load = subprocess.run(
            [*loadgen_command(bins, port, pki, bodies, mode, seconds), "-workers", "2"],
            capture_output=True,
            text=True,
            check=True,
            timeout=seconds + 120,
        )
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    answered = json.loads(load.stdout)
    if answered["errors"] or not answered["requests"]:
        raise RuntimeError(f"{library}/{mode}: {answered['errors']} errors in {answered['requests']} requests")
    total = counted_instructions(sorted(work.glob(f"{out.name}*")))
    return {
        "requests": answered["requests"],
        "instructions_per_request": round(total / answered["requests"]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of load per library and mode")
    parser.add_argument("--jobsets", type=int, default=10_000, help="JobSets the provider serves")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"provider_instructions: {tool} not found (Debian package valgrind)")
    bins = ensure_go_binaries()
    results: dict[str, dict[str, Any]] = {library: {} for library in LIBRARIES}
    with tempfile.TemporaryDirectory(prefix="ktp-instructions-") as directory:
        work = Path(directory)
        pki = make_pki(work)
        data, keys = write_data(work, args.jobsets)
        bodies = write_bodies(work, keys, 10, "instructions")
        for mode in MODES:
            for library in LIBRARIES:
                print(f"{library} {mode} ...", flush=True)
                results[library][mode] = measure(library, mode, data, pki, bins, bodies, args.seconds, work)
    ratios = {
        mode: round(
            results["bundled"][mode]["instructions_per_request"] / results["stdlib"][mode]["instructions_per_request"],
            3,
        )
        for mode in MODES
    }
    path = write_result(
        "provider_instructions",
        {
            "results": results,
            "ratio_bundled_to_stdlib": ratios,
            "setup": {
                "what": "instructions (callgrind Ir) of the provider's process per answered request, load only",
                "jobsets": args.jobsets,
                "keys_per_request": 10,
                "seconds_per_measurement": args.seconds,
                "load": "benchmarks/go/loadgen, 2 workers; newconn = a new TLS 1.3 mTLS connection per lookup",
                "baseline": "--tls-library stdlib in the same run",
            },
        },
    )
    for library in LIBRARIES:
        for mode in MODES:
            print(f"  {library:8} {mode:10} {results[library][mode]}")
    print(f"  bundled/stdlib {ratios}")
    print(f"-> {path}")


if __name__ == "__main__":
    main()
