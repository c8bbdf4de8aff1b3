"""Timing helpers shared by every benchmark."""

from __future__ import annotations

import json
import platform
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def measure(fn: Callable[[], Any], *, warmup: int = 200, iterations: int = 2000) -> dict[str, float]:
    """Wall-clock latency of `fn` per call, in milliseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    return _stats(samples)


def measure_interleaved(
    fns: dict[str, Callable[[], Any]], *, warmup: int = 200, iterations: int = 2000, rounds: int = 5
) -> dict[str, dict[str, float]]:
    """Like `measure` for several functions, in alternating rounds so each sees the same machine load."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    per_round = max(1, iterations // rounds)
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(per_round):
                start = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - start) * 1000.0)
    return {name: _stats(values) for name, values in samples.items()}


def _stats(samples: list[float]) -> dict[str, float]:
    return {
        "iterations": len(samples),
        "median_ms": statistics.median(samples),
        "mean_ms": statistics.fmean(samples),
        "p90_ms": percentile(samples, 90),
        "p99_ms": percentile(samples, 99),
        "min_ms": min(samples),
    }


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    document = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpu_count": __import__("os").cpu_count()},
        **payload,
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return path
