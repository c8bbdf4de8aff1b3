"""Fixtures for the provider's tests: real certificates, a real server, the real kube-apiserver.

The `kube_cluster` fixture (tests/kube/plugin.py) is registered here the same way tests/kube does,
so both folders share one cluster per session.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeflow_trainer_policy_provider.certs import KeyPair, issue, make_ca
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.server import ProviderServer, ServeConfig
from kubeflow_trainer_policy_provider.sources import JobSetSource
from kubeflow_trainer_policy_provider.tls import TLSFiles

KUBE_PLUGIN = "tests.kube.plugin"


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin(KUBE_PLUGIN):
        config.pluginmanager.import_plugin(KUBE_PLUGIN)


@dataclass(frozen=True)
class Pki:
    """Files of a serving CA + cert for 127.0.0.1, a client CA with a client cert, and a rogue client."""

    ca: Path
    cert: Path
    key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    rogue_key: Path
    serving_ca: KeyPair


def _write(pair: KeyPair, directory: Path, stem: str) -> tuple[Path, Path]:
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    pair.write(cert, key)
    return cert, key


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    serving_ca = make_ca("serving-ca")
    client_ca = make_ca("gatekeeper-ca")
    rogue_ca = make_ca("rogue-ca")
    ca, _ = _write(serving_ca, directory, "ca")
    cert, key = _write(issue(serving_ca, "provider", ["127.0.0.1", "localhost"]), directory, "tls")
    client_ca_file, _ = _write(client_ca, directory, "client-ca")
    client_cert, client_key = _write(issue(client_ca, "gatekeeper", [], client=True), directory, "client")
    rogue_cert, rogue_key = _write(issue(rogue_ca, "gatekeeper", [], client=True), directory, "rogue")
    return Pki(ca, cert, key, client_ca_file, client_cert, client_key, rogue_cert, rogue_key, serving_ca)


@dataclass
class Running:
    server: ProviderServer
    logs: io.StringIO

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}/"

    @property
    def metrics(self) -> ProviderMetrics:
        return self.server.metrics


StartProvider = Callable[..., Running]


@pytest.fixture
def start_provider(pki: Pki) -> Iterator[StartProvider]:
    """Start a provider on 127.0.0.1 (ephemeral port) over a source; stopped after the test."""
    started: list[ProviderServer] = []

    def start(source: JobSetSource, *, mtls: bool = False, tls: TLSFiles | None = None, **config: object) -> Running:
        logs = io.StringIO()
        files = tls or TLSFiles(str(pki.cert), str(pki.key), str(pki.client_ca) if mtls else None)
        server = ProviderServer(
            source,
            ServeConfig(tls=files, host="127.0.0.1", port=0, **config),  # type: ignore[arg-type]
            ProviderMetrics(),
            JsonLogger(logs, min_level="debug"),
        )
        server.start()
        started.append(server)
        return Running(server, logs)

    yield start
    for server in started:
        server.stop()
