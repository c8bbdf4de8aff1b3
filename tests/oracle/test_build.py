"""The oracle's builder: what it says when the Go module proxy cannot serve the Trainer module of a tag."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kubeflow_trainer_policy.oracle import build


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go command")
def test_a_tag_the_proxy_does_not_have_is_one_line_naming_module_and_version(tmp_path: Path) -> None:
    """A real request to the proxy for a Trainer version that does not exist (v2.99.0)."""
    (tmp_path / "go.mod").write_text("module example.com/oracle\n\ngo 1.24.0\n")
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    with pytest.raises(build.OracleBuildError) as caught:
        build._copy_crds("v2.99.0", tmp_path, env)
    message = str(caught.value)
    assert "\n" not in message
    assert "the Go module proxy cannot serve github.com/kubeflow/trainer/v2@v2.99.0" in message


def test_a_compiler_error_is_its_last_line() -> None:
    lines = ["go: downloading example.com/a v1.0.0", "# example.com/oracle", "./compat.go:3:1: undefined: x"]
    assert build._failure("v2.3.0", lines) == "cannot build the oracle of Trainer v2.3.0: ./compat.go:3:1: undefined: x"


def test_a_tag_without_its_module_folder_is_refused() -> None:
    with pytest.raises(build.OracleBuildError, match=r"no oracle module for Trainer v9\.9\.9"):
        build.tag_files("v9.9.9")
