"""Issue 29, item 6: `review` says on stderr when no constraint of the profile matches an object of a Kubeflow
API group (a likely typo that Gatekeeper would admit unchecked), and `--strict` makes that an error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.helpers import assert_error, run_cli

TYPOS = [
    ("trainer.kubeflow.org/v1alpha1", "Trainjob", "kind 'Trainjob' is not 'TrainJob' (kinds are case-sensitive)"),
    ("trainer.kubeflow.org", "TrainJob", "apiVersion 'trainer.kubeflow.org' has no version"),
    ("kubeflow.org/v1", "PytorchJob", "kind 'PytorchJob' is not 'PyTorchJob'"),
    ("trainer.kubeflow.org/v1alpha1", "TrainingJob", "the constraints here match these kinds of its group: "),
    # Issue 40: a Kubeflow group in any letter case was not recognised, so --strict let it through silently.
    ("Trainer.Kubeflow.org/v1alpha1", "TrainJob", "API group 'Trainer.Kubeflow.org' is not 'trainer.kubeflow.org'"),
    ("TRAINER.KUBEFLOW.ORG/v1alpha1", "TrainJob", "API group 'TRAINER.KUBEFLOW.ORG' is not 'trainer.kubeflow.org'"),
    ("Kubeflow.org/v1", "PyTorchJob", "API group 'Kubeflow.org' is not 'kubeflow.org'"),
]


def _object(tmp_path: Path, api_version: str, kind: str) -> Path:
    path = tmp_path / "object.yaml"
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "job", "namespace": "team-a"}, "spec": {}}
    path.write_text(yaml.safe_dump(body))
    return path


@pytest.mark.parametrize(("api_version", "kind", "hint"), TYPOS)
def test_an_unmatched_kubeflow_object_is_a_warning(tmp_path: Path, api_version: str, kind: str, hint: str) -> None:
    path = _object(tmp_path, api_version, kind)
    result = run_cli("review", path)
    assert result.code == 0 and result.stdout == "allowed\n", result
    [warning] = result.stderr_lines
    assert warning.startswith(f"trainer-policy review: warning: {path}: no constraint matches kind {kind!r}"), warning
    assert "so Gatekeeper would admit it without any check" in warning and hint in warning, warning
    assert warning.endswith("(--strict makes this an error)")


@pytest.mark.parametrize(("api_version", "kind", "hint"), TYPOS)
def test_strict_makes_it_an_error(tmp_path: Path, api_version: str, kind: str, hint: str) -> None:
    path = _object(tmp_path, api_version, kind)
    result = run_cli("review", path, "--strict", "-o", "json")
    assert_error(result, f"{path}: no constraint matches kind {kind!r}", hint)
    assert result.stdout == ""


def test_stdin_is_named(tmp_path: Path) -> None:
    text = _object(tmp_path, "trainer.kubeflow.org/v1alpha1", "Trainjob").read_text()
    assert_error(run_cli("review", "-", "--strict", stdin=text), "trainer-policy review: <stdin>: no constraint")


@pytest.mark.parametrize(
    ("api_version", "kind"), [("trainer.kubeflow.org/v1alpha1", "TrainJob"), ("v1", "Pod"), ("apps/v1", "Deployment")]
)
def test_matched_or_foreign_objects_are_not_warned_about(tmp_path: Path, api_version: str, kind: str) -> None:
    result = run_cli("review", _object(tmp_path, api_version, kind), "--strict")
    assert result.code in (0, 1), result
    assert "no constraint matches" not in result.stderr


def test_each_object_of_a_multi_document_file_is_checked(tmp_path: Path) -> None:
    """Since review takes folders and multi-document files: the typo is named by file#N, the others still reviewed;
    --strict makes that object an error (exit 2), reported in its place."""
    good = yaml.safe_load(_object(tmp_path, "v1", "Pod").read_text())
    typo = yaml.safe_load(_object(tmp_path, "trainer.kubeflow.org/v1alpha1", "Trainjob").read_text())
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump_all([good, typo]))
    warned = run_cli("review", path, "-o", "json")
    assert warned.code == 0, warned
    [warning] = warned.stderr_lines
    assert warning.startswith(f"trainer-policy review: warning: {path}#2: no constraint matches kind 'Trainjob'")
    strict = run_cli("review", path, "--strict", "-o", "json")
    assert strict.code == 2, strict
    results = json.loads(strict.stdout)["results"]
    assert [r["outcome"] for r in results] == ["allowed", "error"], results
    assert results[1]["errors"][0].startswith(f"{path}#2: no constraint matches kind 'Trainjob'"), results
