"""`trainer-policy podsets`: its table, and one clear line on stderr with exit 2 for every input it cannot use."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from kubeflow_trainer_policy.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runtimes" / "v2.0"
TRAINJOB = FIXTURES / "trainjob-torch-with-initializers-4x8.yaml"
RUNTIMES = FIXTURES / "runtimes.yaml"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["podsets", *argv])
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, *documents: object) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return str(path)


def test_table():
    code, out, err = run(str(TRAINJOB), "--objects", str(RUNTIMES))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "TrainJob team-a/torch-with-initializers-4x8 on TrainingRuntime torch-with-initializers",
        "PODSET               ANCESTOR             COUNT  REQUESTS PER POD",
        "dataset-initializer  dataset-initializer  1      cpu=2 memory=4294967296",
        "model-initializer    model-initializer    1      cpu=2 memory=8589934592",
        "node                 trainer              4      cpu=32250m memory=275146342400 nvidia.com/gpu=8",
        "TOTAL pods=6 trainerNodes=4 cpu=133 memory=1113470271488 nvidia.com/gpu=32",
    ]


def one_error_line(code: int, out: str, err: str) -> str:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_runtime_missing(tmp_path):
    trainjob = yaml.safe_load(TRAINJOB.read_text())
    trainjob["spec"]["runtimeRef"] = {"name": "nope"}
    path = write(tmp_path, "job.yaml", trainjob)
    line = one_error_line(*run(path, "--objects", str(RUNTIMES)))
    assert line == (
        f"trainer-policy podsets: {path}: spec.runtimeRef: "
        'ClusterTrainingRuntime.trainer.kubeflow.org "nope" not found in --objects'
    )


def test_no_runtime_of_that_kind_given():
    line = one_error_line(*run(str(TRAINJOB)))
    assert line == (
        f"trainer-policy podsets: {TRAINJOB}: spec.runtimeRef: no TrainingRuntime objects were given with "
        "--objects, so the runtime cannot be read"
    )


def test_namespaced_runtime_without_namespace_is_in_the_trainjobs(tmp_path):
    runtimes = [doc for doc in yaml.safe_load_all(RUNTIMES.read_text()) if doc]
    for runtime in runtimes:
        runtime["metadata"].pop("namespace", None)
    code, out, _ = run(str(TRAINJOB), "--objects", write(tmp_path, "runtimes.yaml", *runtimes), "-o", "json")
    assert code == 0
    assert '"trainerNodes": 4' in out


def test_not_a_trainjob():
    """A file of runtimes only (several documents are read, runtimes among them are taken as --objects)."""
    line = one_error_line(*run(str(RUNTIMES)))
    assert line == f"trainer-policy podsets: {RUNTIMES}: no TrainJob found"


def test_wrong_kind(tmp_path):
    path = write(tmp_path, "job.yaml", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}})
    line = one_error_line(*run(path, "--objects", str(RUNTIMES)))
    assert line == f"trainer-policy podsets: {path}: kind: expected a TrainJob of trainer.kubeflow.org"


def test_value_that_is_not_a_quantity(tmp_path):
    trainjob = yaml.safe_load(TRAINJOB.read_text())
    trainjob["spec"]["trainer"]["resourcesPerNode"]["requests"]["cpu"] = "32 cores"
    path = write(tmp_path, "job.yaml", trainjob)
    line = one_error_line(*run(path, "--objects", str(RUNTIMES)))
    assert line == (
        f"trainer-policy podsets: {path}: spec.trainer.resourcesPerNode.requests[cpu] is not a Kubernetes quantity"
    )


@pytest.mark.parametrize("profile", ["v9.9"])
def test_unknown_profile(profile):
    line = one_error_line(*run(str(TRAINJOB), "--objects", str(RUNTIMES), "--profile", profile))
    assert "no such bundle (unknown --profile?)" in line


def test_missing_file(tmp_path):
    line = one_error_line(*run(str(tmp_path / "none.yaml")))
    assert line.startswith(f"trainer-policy podsets: {tmp_path / 'none.yaml'}: ")
