"""Running `trainer-policy` in-process (through main(), the CLI's one error boundary) or as a real process."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy_provider.certs import KeyPair, issue, make_ca
from tests.admission import admission_review
from tests.support import inventory_of

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-override-mutability/samples"
ACTIVE_REVIEW = SAMPLES / "gate-change-while-jobset-active.yaml"
ACTIVE_INVENTORY = inventory_of(SAMPLES.parent, "gate-change-while-jobset-active")
EXTERNAL_DATA_RULE = PROJECT_ROOT / "bundles/gatekeeper-external-data/v2.0/trainjob-override-mutability-external-data"
FAILED_CHECK_COMMANDS = ("review", "test", "bundle verify", "generate --check")
"""The only commands allowed to exit 1: a denial, a failed test, a failed verification, drift."""


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


def run_cli(*args: str | Path, stdin: str = "") -> Result:
    """main() in this process, with stdin/stdout/stderr captured; an exception escaping main() fails the test."""
    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        sys.stdin = saved_stdin
    return Result(code, out.getvalue(), err.getvalue())


def run_process(
    *args: str | Path, stdin: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PROJECT_ROOT,
        env=env,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_error(result: Result, *fragments: str) -> None:
    """Exit 2, exactly one line on stderr naming what is wrong, no traceback."""
    assert result.code == 2, result
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr_lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def write_yaml(path: Path, body: object) -> Path:
    path.write_text(body if isinstance(body, str) else yaml.safe_dump(body))
    return path


def write_pair(pair: KeyPair, directory: Path, stem: str) -> tuple[Path, Path]:
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    pair.write(cert, key)
    return cert, key


def serving_pki(directory: Path) -> dict[str, Path]:
    """A CA and a serving certificate for 127.0.0.1 and localhost, as files."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = make_ca("cli-test-ca")
    ca_cert, ca_key = write_pair(ca, directory, "ca")
    cert, key = write_pair(issue(ca, "provider", ["127.0.0.1", "localhost"]), directory, "tls")
    return {"ca": ca_cert, "ca_key": ca_key, "cert": cert, "key": key}


def trainjob_update_review() -> dict:
    old = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job1", "namespace": "team-a"},
        "spec": {"suspend": True, "podSpecOverrides": [{"targetJobs": [{"name": "node"}]}]},
    }
    new = {
        **old,
        "spec": {
            "suspend": True,
            "podSpecOverrides": [{"targetJobs": [{"name": "node"}], "nodeSelector": {"zone": "a"}}],
        },
    }
    return admission_review("UPDATE", new, old)


def provider_object(timeout: object) -> dict:
    """The Provider object the external-data variant's Constraint names (sites write their own)."""
    return {
        "apiVersion": "externaldata.gatekeeper.sh/v1beta1",
        "kind": "Provider",
        "metadata": {"name": "trainer-jobset-provider"},
        "spec": {"url": "https://trainer-jobset-provider.trainer-policy-system:8443/", "timeout": timeout},
    }


def external_data_constraints(folder: Path, timeout: object) -> Path:
    """The external-data variant of override mutability, with a Provider of this spec.timeout."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("template.yaml", "constraint/constraint.yaml"):
        (folder / Path(name).name).write_text((EXTERNAL_DATA_RULE / name).read_text())
    write_yaml(folder / "provider.yaml", provider_object(timeout))
    return folder
