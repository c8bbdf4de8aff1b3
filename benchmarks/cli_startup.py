"""`trainer-policy review` of one sample as a whole process, against `python -c pass` in the same run.

Target (issue 13): one review < 0.35 s. Users run review in CI loops over many manifests,
so the fixed cost of a process (interpreter, imports, loading the profile's constraints, compiling
its templates) is what they pay. The processes are run in interleaved rounds so that every command
sees the same machine load; the ratio to a bare interpreter is reported per round.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import yaml

from benchmarks.common import percentile, write_result
from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SAMPLES = PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-override-mutability/samples"
REVIEW = SAMPLES / "gate-change-while-jobset-active.yaml"
ALLOWED = SAMPLES / "kueue-3-unsuspend.yaml"
"""Admitted by every rule of the profile: its inventory holds the TrainJob's runtime and JobSet."""


def _inventory(case: str) -> Path:
    """The cluster objects file of a case of the rule's suite (cases with the same objects share one)."""
    (test,) = yaml.safe_load((SAMPLES.parent / "suite.yaml").read_text())["tests"]
    (inventory,) = next(c["inventory"] for c in test["cases"] if c["name"] == case)
    return SAMPLES.parent / inventory


INVENTORY = _inventory("gate-change-while-jobset-active")
ALLOWED_INVENTORY = _inventory("kueue-3-unsuspend")
TARGET_SECONDS = 0.35
PYCACHE_VAR = "CLI_STARTUP_PYCACHE"
"""Where the measured processes keep their .pyc files (see _child_environment)."""
ROUNDS = 7
RUNS_PER_ROUND = 3


def _trainer_policy() -> list[str]:
    script = Path(sys.executable).parent / "trainer-policy"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kubeflow_trainer_policy.cli.main"]


_REVIEW_DENIED = [*_trainer_policy(), "review", str(REVIEW), "--objects", str(INVENTORY)]
COMMANDS: dict[str, tuple[list[str], int, dict[str, str]]] = {
    "python_pass": ([sys.executable, "-c", "pass"], 0, {}),
    "help": ([*_trainer_policy(), "--help"], 0, {}),
    "review_denied": (_REVIEW_DENIED, 1, {}),
    "review_allowed_json": (
        [*_trainer_policy(), "review", str(ALLOWED), "--objects", str(ALLOWED_INVENTORY), "-o", "json"],
        0,
        {},
    ),
    "review_denied_uncached": (_REVIEW_DENIED, 1, {ENV_VAR: ""}),
}
"""name -> (argv, expected exit code, environment): a run with another exit code is a failed benchmark, not a
figure. Reviews use a fact cache of the benchmark's own (filled by the warm-up run, as a user's is after the
first review); `_uncached` turns it off and parses every template module in every process."""


def _child_environment(env: dict[str, str]) -> dict[str, str]:
    """The environment of a measured process: bytecode caching on, as in a user's install (pip compiles the
    package's .pyc files), wherever the benchmark runs: with PYTHONDONTWRITEBYTECODE set (as on this project's
    work machines) every process would compile the modules it imports from source again. The .pyc files go
    to the benchmark's own cache folder (PYTHONPYCACHEPREFIX), not into the work tree."""
    child = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**child, "PYTHONPYCACHEPREFIX": os.environ[PYCACHE_VAR], **env}


def _run_once(argv: list[str], expected: int, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, cwd=PROJECT_ROOT, timeout=120, env=_child_environment(env))
    elapsed = time.perf_counter() - start
    if proc.returncode != expected:
        raise RuntimeError(f"{argv} exited {proc.returncode}, expected {expected}: {proc.stderr.decode()[-500:]}")
    return elapsed


def measure() -> dict[str, object]:
    with (
        tempfile.TemporaryDirectory(prefix="cli-startup-facts-") as cache,
        tempfile.TemporaryDirectory(prefix="cli-startup-pycache-") as pycache,
        mock.patch.dict(os.environ, {ENV_VAR: cache, PYCACHE_VAR: pycache}),
    ):
        return _measure()


def _measure() -> dict[str, object]:
    for argv, expected, env in COMMANDS.values():  # warm the page cache, .pyc files and the fact cache
        _run_once(argv, expected, env)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    ratios: dict[str, list[float]] = {name: [] for name in COMMANDS if name != "python_pass"}
    for _ in range(ROUNDS):
        round_medians = {}
        for name, (argv, expected, env) in COMMANDS.items():
            runs = [_run_once(argv, expected, env) for _ in range(RUNS_PER_ROUND)]
            samples[name] += runs
            round_medians[name] = statistics.median(runs)
        for name in ratios:
            ratios[name].append(round_medians[name] / round_medians["python_pass"])
    result: dict[str, object] = {
        name: {
            "runs": len(values),
            "median_s": statistics.median(values),
            "min_s": min(values),
            "p90_s": percentile(values, 90),
            "max_s": max(values),
        }
        for name, values in samples.items()
    }
    result["ratio_to_python_pass"] = {
        name: {"min": min(values), "median": statistics.median(values), "max": max(values)}
        for name, values in ratios.items()
    }
    review_median = statistics.median(samples["review_denied"])
    result["target"] = {
        "what": "one `trainer-policy review` of a sample as a whole process",
        "seconds": TARGET_SECONDS,
        "median_s": review_median,
        "met": review_median < TARGET_SECONDS,
    }
    return result


def main() -> None:
    result = measure()
    path = write_result("cli_startup", result)
    review = result["review_denied"]
    ratio = result["ratio_to_python_pass"]["review_denied"]  # type: ignore[index]
    python = result["python_pass"]
    print(
        f"review as a process: median {review['median_s']:.3f} s (min {review['min_s']:.3f} s), "  # type: ignore[index]
        f"python -c pass {python['median_s']:.3f} s, ratio median {ratio['median']:.1f}x; "  # type: ignore[index]
        f"target < {TARGET_SECONDS} s met: {result['target']['met']} -> {path}"  # type: ignore[index]
    )


if __name__ == "__main__":
    main()
