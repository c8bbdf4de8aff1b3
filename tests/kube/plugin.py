"""pytest plugin: the ``kube`` marker and the session-scoped ``kube_cluster`` fixture.

Registered once per session by ``tests/conftest.py`` (``pytest_plugins = ["tests.kube.plugin"]``),
so every test folder can use the one cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kube.cluster import KubeCluster

KUBE_MARKER = "kube: starts a real kube-apiserver + etcd on 127.0.0.1 (built from Debian packages)"

GATEKEEPER_MARKER = "gatekeeper: runs a real Gatekeeper manager (pinned, built from its module) on the test API server"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", KUBE_MARKER)
    config.addinivalue_line("markers", GATEKEEPER_MARKER)


@pytest.fixture(scope="session")
def kube_cluster() -> Iterator[KubeCluster]:
    """One cluster for the whole session; its processes die with the session even on failure."""
    with KubeCluster.start() as cluster:
        yield cluster
