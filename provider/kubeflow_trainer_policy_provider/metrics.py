"""Prometheus text exposition (format 0.0.4) for the provider's counters, gauges and one histogram.

Small on purpose: no client library, thread-safe, label sets fixed at first use.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def _labels(pairs: tuple[tuple[str, str], ...]) -> str:
    if not pairs:
        return ""
    inner = ",".join(f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in pairs)
    return "{" + inner + "}"


@dataclass
class Counter:
    name: str
    help: str
    _values: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self._values.get(tuple(sorted(labels.items())), 0.0)

    def total(self) -> float:
        return sum(self._values.values())

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            items = sorted(self._values.items())
        lines += [f"{self.name}{_labels(k)} {v:g}" for k, v in items] or [f"{self.name} 0"]
        return lines


@dataclass
class Gauge:
    """A gauge read from a callback at scrape time."""

    name: str
    help: str
    read: Callable[[], float]

    def render(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge", f"{self.name} {self.read():g}"]


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...] = LATENCY_BUCKETS
    _counts: list[int] = field(default_factory=list)
    _sum: float = 0.0
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._counts = [0] * (len(self.buckets) + 1)

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.buckets, value)
        with self._lock:
            self._counts[index] += 1
            self._sum += value
            self._count += 1

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            counts, total, count = list(self._counts), self._sum, self._count
        running = 0
        for bound, n in zip(self.buckets, counts, strict=False):
            running += n
            lines.append(f'{self.name}_bucket{{le="{bound:g}"}} {running}')
        lines.append(f'{self.name}_bucket{{le="+Inf"}} {count}')
        lines += [f"{self.name}_sum {total:.6f}", f"{self.name}_count {count}"]
        return lines


class ProviderMetrics:
    """Everything `/metrics` shows. Cache gauges are attached by the source once it exists."""

    def __init__(self) -> None:
        self.requests = Counter(
            "provider_requests_total", "HTTP requests by endpoint (provider or probe path) and status code."
        )
        self.keys = Counter("provider_keys_total", "Keys answered, by outcome (value or error).")
        self.request_errors = Counter(
            "provider_request_errors_total", "Requests answered with systemError or an HTTP error, by reason."
        )
        self.latency = Histogram("provider_request_duration_seconds", "Time to answer one ProviderRequest.")
        self.api_calls = Counter("provider_kube_api_calls_total", "Calls to the Kubernetes API by verb and outcome.")
        self.watch_restarts = Counter("provider_watch_restarts_total", "Watch streams restarted, by reason.")
        self.tls_reloads = Counter("provider_tls_reloads_total", "Serving TLS material (re)loaded, by outcome.")
        self.evictions = Counter(
            "provider_connections_evicted_total",
            "Connections closed to admit a new one at --max-connections, by the state they were in.",
        )
        self.reaped = Counter(
            "provider_connections_reaped_total",
            "Connections closed or reset by their client before they were served, found at accept or at the cap.",
        )
        self.gauges: list[Gauge] = []

    def add_gauge(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        self.gauges.append(Gauge(name, help_text, read))

    def render(self) -> str:
        lines: list[str] = []
        for counter in (
            self.requests,
            self.keys,
            self.request_errors,
            self.api_calls,
            self.watch_restarts,
            self.tls_reloads,
            self.evictions,
            self.reaped,
        ):
            lines += counter.render()
        lines += self.latency.render()
        for gauge in self.gauges:
            lines += gauge.render()
        return "\n".join(lines) + "\n"
