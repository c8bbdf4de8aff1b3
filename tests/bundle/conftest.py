"""Bundles built once per session by the real CLI, one per generated profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundle.helpers import PROFILES, cli


@pytest.fixture(scope="session")
def built_bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    proc = cli("bundle", "build", "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    return {profile: out / f"kubeflow-trainer-policy-{profile}.tar.gz" for profile in PROFILES}
