"""Session-wide test wiring: the real kube-apiserver fixture (`kube_cluster`) and the `kube` marker, a fact cache
of the session's own, so no test reads or writes the user's ~/.cache (CLI subprocesses inherit it), and the
grouping that keeps what shares one expensive fixture on one pytest-xdist worker."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR

ROOT = Path(__file__).resolve().parents[1]

pytest_plugins = ["tests.kube.plugin"]

SHARED_FIXTURES = {"kube_cluster": "kube", "project_wheel": "wheel", "gatekeeper": "gatekeeper"}
"""Session fixtures that start or build something heavy (a kube-apiserver and etcd; the project's wheel): every
test using one runs on the same worker (`--dist loadgroup`), so the session does it once, not once per worker."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the markers to schedule by group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, group in SHARED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session", autouse=True)
def session_fact_cache(tmp_path_factory):
    """The fact cache and its HMAC key (kept under XDG_STATE_HOME) in the session's own folders."""
    folder = tmp_path_factory.mktemp("trainer-policy-facts")
    state = tmp_path_factory.mktemp("trainer-policy-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_VAR, str(folder))
        patch.setenv("XDG_STATE_HOME", str(state))
        yield folder


@pytest.fixture(scope="session")
def project_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel a plain `pip install` of the checkout installs, built from a copy of it (building writes build/
    into its source folder)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("generator", "provider", "bundles", "policies", "profiles", "requirements"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", root / "dist", source]
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = (root / "dist").glob("kubeflow_trainer_policy-*.whl")
    return built
