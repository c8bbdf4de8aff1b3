"""A real v2.0 OPA bundle, built once for the CLI tests that sign, verify or fuzz it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeflow_trainer_policy.cli.main import main


@pytest.fixture(scope="session")
def built_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    assert main(["bundle", "build", "--output-dir", str(out), "--profile", "v2.0"]) == 0
    return out / "kubeflow-trainer-policy-v2.0.tar.gz"
