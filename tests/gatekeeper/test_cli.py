"""`trainer-policy review` and `test` as a user runs them: a real process, exit codes, stdout and stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.gatekeeper.helpers import FIXTURES, admission_review, trainjob

CONSTRAINTS = [
    str(FIXTURES / "templates.yaml"),
    str(FIXTURES / "constraints.yaml"),
    str(FIXTURES / "external-constraint.yaml"),
]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def write_yaml(path: Path, body) -> str:
    path.write_text(yaml.safe_dump(body) if not isinstance(body, str) else body)
    return str(path)


def review(tmp_path, body, *extra: str) -> subprocess.CompletedProcess:
    return cli("review", write_yaml(tmp_path / "review.yaml", body), "--constraints", *CONSTRAINTS, *extra)


def test_review_json_of_a_denied_update(tmp_path):
    old = trainjob(labels={"team": "a", "cost-center": "c", "owner": "o"}, owner="alice", keys=[])
    new = {**old, "spec": {"owner": "bob", "keys": []}}
    proc = review(tmp_path, admission_review("UPDATE", new, old), "-o", "json")
    assert proc.returncode == 1, proc.stderr
    body = json.loads(proc.stdout)
    assert body["allowed"] is False
    by_constraint = {v["constraint"]: v for v in body["violations"]}
    assert by_constraint["immutable-owner"] == {
        "constraint": "immutable-owner",
        "template": "k8simmutablename",
        "enforcementAction": "deny",
        "msg": "owner changed from alice to bob",
        "details": {},
    }
    assert set(by_constraint) == {"immutable-owner", "echo"}


def test_review_of_a_bare_object_is_a_create_and_allowed(tmp_path):
    bare = write_yaml(tmp_path / "job.yaml", trainjob(labels={"team": "a", "cost-center": "c", "owner": "o"}))
    proc = cli("review", bare, "--constraints", *CONSTRAINTS[:2], "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"allowed": True, "violations": []}
    proc = cli("review", bare, "--constraints", *CONSTRAINTS[:2], "-o", "json")
    unlabelled = write_yaml(tmp_path / "bare.yaml", trainjob(labels={}))
    proc = cli("review", unlabelled, "--constraints", *CONSTRAINTS[:2], "-o", "json")
    assert proc.returncode == 1
    assert "label team is required" in proc.stdout


def test_review_objects_back_the_in_process_provider(tmp_path):
    jobset = FIXTURES / "suite" / "jobset.yaml"
    proc = review(
        tmp_path, trainjob(keys=["team-a/job1"], labels={"team": "a"}), "--objects", str(jobset), "-o", "json"
    )
    [echo] = [v for v in json.loads(proc.stdout)["violations"] if v["constraint"] == "echo"]
    assert echo["details"]["responses"] == [["team-a/job1", {"found": True, "activeReplicatedJobs": ["node"]}]]


def test_review_text_output(tmp_path):
    proc = review(tmp_path, trainjob(labels={}))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "denied"
    assert "[deny] team-label: metadata.labels: Required: label team is required" in lines
    assert "[warn] cost-center-warn: metadata.labels: Required: label cost-center is required" in lines


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: [unclosed", r"review.yaml: invalid YAML at line 1"),
        ("- a\n- b\n", r"review.yaml: expected a mapping"),
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "PATCH"}},
            r"review.yaml: request.operation: must be one of CREATE, UPDATE, DELETE, CONNECT",
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"operation": "UPDATE", "object": trainjob()},
            },
            r"review.yaml: request.oldObject: required for UPDATE",
        ),
        (
            {"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview", "request": {}},
            r"review.yaml: apiVersion: must be one of",
        ),
        ({"metadata": {"name": "x"}}, r"review.yaml: object: must have apiVersion and kind"),
        (b"\xff\xfe".decode("latin-1"), r"review.yaml: "),
    ],
)
def test_malformed_review_is_one_line_and_exit_2(tmp_path, content, expected):
    proc = review(tmp_path, content)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert __import__("re").search(expected, proc.stderr), proc.stderr


def test_missing_files_and_bad_parameters_exit_2(tmp_path):
    proc = cli("review", str(tmp_path / "nope.yaml"), "--constraints", *CONSTRAINTS)
    assert proc.returncode == 2 and "nope.yaml: No such file or directory" in proc.stderr
    params = write_yaml(tmp_path / "params.yaml", {"team-label": {"label": ["not", "a", "string"]}})
    proc = review(tmp_path, trainjob(), "--parameters", params)
    assert proc.returncode == 2
    assert "params.yaml: spec.parameters.label: ['not', 'a', 'string'] is not of type 'string'" in proc.stderr
    proc = cli("review", write_yaml(tmp_path / "r.yaml", trainjob()), "--profile", "v9.9")
    assert proc.returncode == 2 and "--profile: unknown profile 'v9.9' (known: v2.0" in proc.stderr


def test_engine_error_in_a_template_exits_2_naming_it(tmp_path):
    broken = (FIXTURES / "templates.yaml").read_text().split("---")[1].replace("old != new", "old != nope(new)")
    template = write_yaml(tmp_path / "broken.yaml", broken)
    proc = cli("review", write_yaml(tmp_path / "r.yaml", trainjob()), "--constraints", template)
    assert proc.returncode == 2
    assert "template k8simmutablename: Rego does not compile" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_every_command_has_help():
    for args in (["--help"], ["review", "--help"], ["test", "--help"]):
        proc = cli(*args)
        assert proc.returncode == 0 and "usage: trainer-policy" in proc.stdout


def test_test_command_passes_rego_tests_and_suites():
    proc = cli("test", str(FIXTURES / "rego-pass"), str(FIXTURES / "suite"), "--coverage", "--threshold", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "PASS data.owner_test.test_has_owner" in lines
    assert any(line.endswith("required-label/unlabelled-update") and line.startswith("PASS") for line in lines)
    assert any("external/jobset-from-inventory" in line for line in lines)
    assert "coverage owner.rego: 2/2" in lines
    assert lines[-1] == "7 passed, 0 failed"


def test_gator_suite_whose_template_calls_external_data_fails_as_under_gator(tmp_path):
    """gator registers no external_data builtin: a test.gatekeeper.sh Suite with such a template cannot load."""
    suite = (FIXTURES / "suite" / "provider-suite.yaml").read_text()
    suite = suite.replace("trainer-policy.kubeflow.org/v1alpha1", "test.gatekeeper.sh/v1alpha1")
    suite = suite.replace("external-echo-template.yaml", str(FIXTURES / "suite" / "external-echo-template.yaml"))
    suite = suite.replace("../external-constraint.yaml", str(FIXTURES / "external-constraint.yaml"))
    suite = suite.replace("keys.yaml", str(FIXTURES / "suite" / "keys.yaml"))
    suite = suite.replace("[jobset.yaml]", f"[{FIXTURES / 'suite' / 'jobset.yaml'}]")
    (tmp_path / "suite.yaml").write_text(suite)
    proc = cli("test", str(tmp_path))
    assert proc.returncode == 1
    assert "rego_type_error: undefined function external_data" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed"


def test_test_command_reports_failures_and_errors():
    proc = cli("test", str(FIXTURES / "rego-fail"))
    assert proc.returncode == 1
    assert "FAIL data.broken_test.test_fails: undefined" in proc.stdout
    assert "FAIL data.broken_test.test_errors: error:" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "1 passed, 2 failed"


def test_coverage_threshold_fails_below(tmp_path):
    (tmp_path / "p.rego").write_text("package p\n\nf(x) := 1 if x > 1\n\ng(x) := 2 if x < 1\n")
    (tmp_path / "p_test.rego").write_text("package p_test\n\nimport data.p\n\ntest_f if p.f(2) == 1\n")
    proc = cli("test", str(tmp_path), "--coverage", "--threshold", "95")
    assert proc.returncode == 1
    assert "coverage total: 50.0%" in proc.stdout
    assert "coverage 50.0% is below the threshold 95.0%" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "1 passed, 0 failed"


def test_test_command_runs_every_package_when_one_errs(tmp_path):
    """All packages run in one query; when that query errs, each package and then each test runs alone, so the
    error is pinned to its test and the other packages still pass."""
    (tmp_path / "a_test.rego").write_text("package a_test\n\ntest_one if true\n\ntest_two if 1 == 1\n")
    (tmp_path / "b_test.rego").write_text(
        'package b_test\n\ntest_ok if true\n\ntest_errs if to_number("x") == 1\n\ntest_false if false\n'
    )
    proc = cli("test", str(tmp_path))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert {"PASS data.a_test.test_one", "PASS data.a_test.test_two", "PASS data.b_test.test_ok"} <= set(lines)
    assert any(line.startswith("FAIL data.b_test.test_errs: error:") for line in lines), lines
    assert "FAIL data.b_test.test_false: undefined" in lines
    assert lines[-1] == "3 passed, 2 failed"


def test_test_command_names_the_bad_file_when_folders_run_in_workers(tmp_path):
    """Folders run in worker processes; a bad suite in one still ends the run with its one-line error."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "a_test.rego").write_text("package a_test\n\ntest_x if true\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "s.yaml").write_text("kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\ntests: 5\n")
    proc = cli("test", str(tmp_path / "a"), str(tmp_path / "b"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"trainer-policy test: {tmp_path / 'b' / 's.yaml'}: tests: must be a list"
    assert proc.stdout == ""


@pytest.mark.parametrize("with_test", [True, False])
def test_test_command_reports_a_folder_that_does_not_compile(tmp_path, with_test):
    """Modules that do not compile fail the folder as one outcome, whether or not it holds tests."""
    (tmp_path / "p.rego").write_text("package p\n\nx := no_such_function(1)\n")
    if with_test:
        (tmp_path / "p_test.rego").write_text("package p_test\n\ntest_x if true\n")
    proc = cli("test", str(tmp_path))
    assert proc.returncode == 1
    assert f"FAIL {tmp_path}: does not compile:" in proc.stdout
    assert "undefined function no_such_function" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed"
