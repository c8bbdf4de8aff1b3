"""Loads tests/kube/plugin.py (``kube`` marker, ``kube_cluster`` fixture) unless a root conftest did.

Other test folders get the fixture from a root ``tests/conftest.py`` with
``pytest_plugins = ["tests.kube.plugin"]``; the plugin is then registered once for the session.
"""

from __future__ import annotations

import pytest

PLUGIN = "tests.kube.plugin"


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.import_plugin(PLUGIN)
