"""A real pip install: the wheel built from the checkout, installed (not editable) into a fresh venv, used from an
empty folder as a user would. Bundles, policies and the engine's pinned requirements ship inside it; every
`--help` works before the engine is installed; `trainer-policy install-engine` installs it (with plain pip and
with pipx); nothing is written into site-packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubeflow_trainer_policy.opa.toolchain import opa_binary
from tests.support import inventory_of

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "bundles" / "gatekeeper" / "v2.0" / "trainjob-managed-by" / "samples"
HELP = [
    [],
    ["generate"],
    ["review"],
    ["test"],
    ["bundle"],
    *(["bundle", verb] for verb in ("build", "sign", "verify", "serve", "push", "pull")),
    ["provider"],
    ["provider", "serve"],
    ["certs"],
    ["podsets"],
    ["install-engine"],
]


def _run(*args: str | Path, cwd: Path | None = None, timeout: float = 600, env: dict | None = None):
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False, env=env
    )


def _ok(*args: str | Path, **kwargs) -> str:
    proc = _run(*args, **kwargs)
    assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


@pytest.fixture(scope="module")
def venv(project_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its declared dependencies, and no OPA engine yet."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _ok(sys.executable, "-m", "venv", venv)
    _ok(venv / "bin" / "python", "-m", "pip", "install", "--quiet", project_wheel)
    return venv


def _site_packages(venv: Path) -> set[str]:
    (site,) = (venv / "lib").glob("python3*/site-packages")
    return {str(p.relative_to(site)) for p in site.rglob("*") if "__pycache__" not in p.parts}


def test_every_help_and_version_work_without_the_engine(venv: Path, tmp_path: Path):
    probe = "import importlib.util as u; print(u.find_spec('opa_bindings') is None)"
    assert _ok(venv / "bin" / "python", "-c", probe).strip() == "True"
    cli = venv / "bin" / "trainer-policy"
    for words in HELP:
        proc = _run(cli, *words, "--help", cwd=tmp_path)
        assert proc.returncode == 0 and proc.stderr == "" and "usage: trainer-policy" in proc.stdout, (words, proc)
    assert _ok(cli, "--version").strip() == "trainer-policy 0.1.0"
    proc = _run(cli, "review", SAMPLES / "create-disallowed-value.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("is not installed: run `trainer-policy install-engine`"), proc.stderr


def test_installed_wheel_reviews_tests_and_builds_from_an_empty_folder(venv: Path, tmp_path: Path):
    cli = venv / "bin" / "trainer-policy"
    _ok(cli, "install-engine")
    before = _site_packages(venv)
    work = tmp_path / "empty"
    work.mkdir()
    for name in ("create-disallowed-value.yaml", "create-unset-allowed.yaml"):
        shutil.copy(SAMPLES / name, work / name)
    shutil.copy(inventory_of(SAMPLES.parent, "create-unset-allowed"), work / "create-unset-allowed-inventory.yaml")

    denied = _run(cli, "review", "create-disallowed-value.yaml", "--profile", "v2.0", cwd=work)
    assert denied.returncode == 1, denied.stderr
    assert "[deny] trainjob-managed-by: spec.managedBy: Invalid:" in denied.stdout
    allowed = _run(
        cli, "review", "create-unset-allowed.yaml", "--objects", "create-unset-allowed-inventory.yaml", cwd=work
    )
    assert allowed.returncode == 0 and allowed.stdout.strip() == "allowed", allowed

    # The shipped policies, profile lib, case tables and suites of one profile (every profile: make build).
    tested = _ok(cli, "test", "--quiet", "--profile", "v2.0", cwd=work)
    passed = int(tested.strip().splitlines()[-1].split()[0])
    assert tested.strip().endswith(" passed, 0 failed") and passed > 500, tested[-500:]
    assert "policies + profiles/v2.0" in tested and "bundles/gatekeeper/v2.0" in tested

    # No opa on PATH, no tools/versions.json in an installed package: built, checked on the embedded engine, and said.
    plain = {k: v for k, v in os.environ.items() if k != "TRAINER_POLICY_OPA"}
    built = _run(cli, "bundle", "build", "--profile", "v2.0", cwd=work, env=plain)
    assert built.returncode == 0, built.stderr
    assert "activation checked on the embedded OPA only" in built.stderr
    assert (work / "dist" / "kubeflow-trainer-policy-v2.0.tar.gz").is_file()
    # A user's own opa ($TRAINER_POLICY_OPA; here the build's) judges activation, with no note.
    real = _run(
        cli, "bundle", "build", "--profile", "v2.0", cwd=work, env={**plain, "TRAINER_POLICY_OPA": str(opa_binary())}
    )
    assert real.returncode == 0 and "embedded" not in real.stderr, real.stderr

    generate = _run(cli, "generate", cwd=work)
    assert generate.returncode == 2 and "source checkout" in generate.stderr
    assert _site_packages(venv) == before, "the CLI wrote into site-packages"


def test_pipx_install_then_install_engine(project_wheel: Path, tmp_path: Path):
    """pipx's venvs have no pip of their own; install-engine runs pipx's shared one through `python -m pip`."""
    tools = tmp_path / "pipx-tool"
    _ok(sys.executable, "-m", "venv", tools)
    _ok(tools / "bin" / "python", "-m", "pip", "install", "--quiet", "pipx")
    env = {**os.environ, "PIPX_HOME": str(tmp_path / "pipx-home"), "PIPX_BIN_DIR": str(tmp_path / "bin")}
    _ok(tools / "bin" / "pipx", "install", project_wheel, env=env)
    cli = tmp_path / "bin" / "trainer-policy"
    _ok(cli, "install-engine", env=env)
    proc = _run(cli, "review", SAMPLES / "create-disallowed-value.yaml", "-o", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 1 and '"constraint": "trainjob-managed-by"' in proc.stdout, proc.stderr
