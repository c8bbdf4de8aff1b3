"""The provider stands alone: it imports nothing of the generator, and its own entry point installs and serves
from a fresh venv that has no OPA engine (what deploy/provider/Containerfile builds)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubeflow_trainer_policy_provider.certs import issue, make_ca
from tests.provider.helpers import post, provider_request, session, wait_until
from tests.support import free_port

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_DIR = ROOT / "provider" / "kubeflow_trainer_policy_provider"


def _imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", sorted(PROVIDER_DIR.rglob("*.py")), ids=lambda p: p.name)
def test_no_provider_module_imports_the_generator(module: Path):
    assert not _imported_top_levels(module) & {
        "kubeflow_trainer_policy",
        "generator",
        "opa_bindings",
        "tests",
    }


def _run(*args: str | Path, timeout: float = 300) -> str:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout


@pytest.fixture(scope="module")
def bare_venv(project_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with only the project's wheel and the provider's own dependencies (no OPA engine)."""
    venv = tmp_path_factory.mktemp("standalone") / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "--no-deps", project_wheel)
    _run(python, "-m", "pip", "install", "--quiet", "pyyaml", "requests")
    return venv


def test_the_venv_has_no_opa_engine(bare_venv: Path):
    probe = "import importlib.util as u; print(u.find_spec('opa_bindings') is None)"
    assert _run(bare_venv / "bin" / "python", "-c", probe).strip() == "True"


def test_the_entry_point_loads_no_generator_module(bare_venv: Path):
    probe = (
        "import sys, kubeflow_trainer_policy_provider.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'generator', 'jsonschema', 'oras'}))"
    )
    assert _run(bare_venv / "bin" / "python", "-c", probe).strip() == "[]"


def test_the_entry_point_serves_from_a_venv_without_the_engine(bare_venv: Path, tmp_path: Path):
    ca = make_ca("serving-ca")
    ca.write(tmp_path / "ca.crt", tmp_path / "ca.key")
    issue(ca, "provider", ["127.0.0.1"]).write(tmp_path / "tls.crt", tmp_path / "tls.key")
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "job", "namespace": "team-a"},
        "status": {"replicatedJobsStatus": [{"name": "node", "active": 2}]},
    }
    (tmp_path / "jobsets.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [jobset]}))
    port = free_port()
    command = [
        bare_venv / "bin" / "trainer-policy-provider",
        "serve",
        "--listen",
        f"127.0.0.1:{port}",
        "--tls-cert",
        tmp_path / "tls.crt",
        "--tls-key",
        tmp_path / "tls.key",
        "--objects",
        tmp_path / "jobsets.json",
    ]
    proc = subprocess.Popen([str(c) for c in command], stderr=subprocess.PIPE, text=True)
    try:
        client = session(str(tmp_path / "ca.crt"))
        url = f"https://127.0.0.1:{port}/"

        def answered() -> bool:
            try:
                return client.post(url, json=provider_request([]), timeout=2).status_code == 200
            except OSError:
                return False

        wait_until(answered, timeout=30, interval=0.2)
        body = post(client, url, ["team-a/job", "team-a/missing"])
        items = {item["key"]: item for item in body["response"]["items"]}
        assert items["team-a/job"]["value"] == {"found": True, "activeReplicatedJobs": ["node"]}
        assert items["team-a/missing"]["value"] == {"found": False, "activeReplicatedJobs": []}
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_bad_input_is_one_line_and_exit_2(bare_venv: Path, tmp_path: Path):
    command = [bare_venv / "bin" / "trainer-policy-provider", "serve", "--tls-cert", tmp_path / "none.crt"]
    command += ["--tls-key", tmp_path / "none.key", "--objects", tmp_path / "none.json"]
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("trainer-policy-provider serve: "), proc.stderr
