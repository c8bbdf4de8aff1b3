"""Assembles a running provider: JobSet source + handler + HTTPS server (+ plain health port)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubeflow_trainer_policy_provider.handler import MAX_KEYS, ProviderHandler
from kubeflow_trainer_policy_provider.http_server import (
    InvalidSetting,
    Limits,
    ProviderHTTPServer,
    ServerThread,
    require_positive,
)
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.sources import JobSetSource
from kubeflow_trainer_policy_provider.tls import ReloadingTLS, TLSFiles

DEFAULT_REQUEST_TIMEOUT = 1.2
"""Seconds. With a live GET (0.5 s timeout) started just before it, an answer leaves within 1.7 s: below the
2 s `spec.timeout` of the Provider object `trainer-policy certs --provider-yaml` writes."""


@dataclass(frozen=True)
class ServeConfig:
    tls: TLSFiles
    host: str = "0.0.0.0"
    port: int = 8443
    health_port: int | None = None
    """Plain-HTTP port with /healthz, /readyz and /metrics only (kubelet probes cannot do mTLS)."""
    max_keys: int = MAX_KEYS
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    limits: Limits = field(default_factory=Limits)
    tls_check_interval: float = 1.0

    def __post_init__(self) -> None:
        require_positive(self, except_for=("port", "health_port"))
        for name, port in (("port", self.port), ("health_port", self.health_port)):
            if port is not None and not 0 <= port <= 65535:
                raise InvalidSetting(name, f"must be a TCP port (0-65535), got {port}")


class ProviderServer:
    def __init__(
        self,
        source: JobSetSource,
        config: ServeConfig,
        metrics: ProviderMetrics | None = None,
        logger: JsonLogger | None = None,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
    ):
        self.source = source
        self.config = config
        self.metrics = metrics or ProviderMetrics()
        self.logger = logger or JsonLogger()
        self.tls = ReloadingTLS(config.tls, self.metrics, self.logger, config.tls_check_interval)
        self.handler = ProviderHandler(source, max_keys=config.max_keys, timeout=config.request_timeout)
        self._servers: list[ProviderHTTPServer] = [
            ProviderHTTPServer(
                (config.host, config.port),
                self.handler,
                self.metrics,
                self.logger,
                self.tls,
                config.limits,
                self.is_ready,
                # With a health port, /metrics and the probes live there only: the HTTPS port, which a
                # NetworkPolicy opens to Gatekeeper alone, answers ProviderRequests and nothing else.
                serve_probes=config.health_port is None,
            )
        ]
        if config.health_port is not None:
            self._servers.append(
                ProviderHTTPServer(
                    (config.host, config.health_port),
                    None,
                    self.metrics,
                    self.logger,
                    None,
                    config.limits,
                    self.is_ready,
                )
            )
        self._thread = ServerThread(self._servers, loop_factory)
        self.metrics.add_gauge(
            "provider_open_connections",
            "Open client connections, main and health port (handshaking ones included).",
            lambda: float(sum(len(server.connections) for server in self._servers)),
        )

    def is_ready(self) -> bool:
        return bool(getattr(self.source, "ready", True))

    @property
    def port(self) -> int:
        return int(self._servers[0].server_address[1])

    @property
    def health_port(self) -> int | None:
        return int(self._servers[1].server_address[1]) if len(self._servers) > 1 else None

    def start(self) -> None:
        start_source = getattr(self.source, "start", None)
        if start_source is not None:
            start_source()
        self._thread.start()
        self.logger.info(
            "provider_started",
            port=self.port,
            health_port=self.health_port,
            mtls=bool(self.config.tls.client_ca_file),
            tls_library=self.tls.current().library,
            source=type(self.source).__name__,
        )

    def stop(self) -> None:
        self._thread.stop()
        stop_source = getattr(self.source, "stop", None)
        if stop_source is not None:
            stop_source()
        self.logger.info("provider_stopped")

    def __enter__(self) -> ProviderServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
