"""CI-shaped use: `review` and `podsets` over folders of multi-document manifests (and stdin), each object
reported with its file and document number, the exit code the worst outcome; `review` and `test` as JSON and as
JUnit XML, checked with a real XML parser and against the common JUnit schema (tests/cli/fixtures/junit.xsd)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
import yaml

from tests.cli.helpers import PROJECT_ROOT, run_cli
from tests.support import inventory_of

MANAGED_BY = PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-managed-by/samples"
UNSET_INVENTORY = inventory_of(MANAGED_BY.parent, "create-unset-allowed")
RUNTIMES = PROJECT_ROOT / "tests/fixtures/runtimes/v2.0"
JUNIT = xmlschema.XMLSchema(Path(__file__).with_name("fixtures") / "junit.xsd")


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _multi(path: Path, *docs: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(list(docs)))
    return path


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    """A CI repository's folder: a multi-document file (denied, then allowed), a nested folder with an allowed
    TrainJob and a runtime, a hidden folder that is skipped, and a README that is not YAML."""
    (denied,) = _docs(MANAGED_BY / "create-disallowed-value.yaml")
    (allowed,) = _docs(MANAGED_BY / "create-unset-allowed.yaml")
    (runtime,) = _docs(UNSET_INVENTORY)
    root = tmp_path / "manifests"
    _multi(root / "jobs.yaml", denied, allowed)
    _multi(root / "team-b" / "job.yml", allowed, runtime)
    _multi(root / ".git" / "ignored.yaml", denied)
    (root / "README.md").write_text("not a manifest\n")
    return root


def _review(*args: str | Path) -> tuple[int, dict, str]:
    result = run_cli("review", *args, "--objects", UNSET_INVENTORY, "-o", "json")
    return result.code, json.loads(result.stdout), result.stderr


def test_review_folder_reports_each_object_with_file_and_index(manifests: Path):
    code, body, _ = _review(manifests)
    assert code == 1  # the worst outcome: one denial
    found = [
        (Path(r["file"]).relative_to(manifests).as_posix(), r["index"], r["kind"], r["outcome"])
        for r in body["results"]
    ]
    assert found == [
        ("jobs.yaml", 1, "TrainJob", "denied"),
        ("jobs.yaml", 2, "TrainJob", "allowed"),
        ("team-b/job.yml", 1, "TrainJob", "allowed"),
        ("team-b/job.yml", 2, "ClusterTrainingRuntime", "allowed"),
    ]
    assert body["summary"] == {"objects": 4, "allowed": 3, "denied": 1, "error": 0}
    assert body["allowed"] is False
    (violation,) = body["violations"]
    assert violation["constraint"] == "trainjob-managed-by" and body["results"][0]["violations"] == [violation]
    assert body["results"][0]["namespace"] == "team-a" and body["results"][0]["name"] == "job"


def test_review_exit_code_is_the_worst_outcome(manifests: Path, tmp_path: Path):
    assert _review(manifests / "team-b")[0] == 0
    assert _review(manifests / "team-b", manifests / "jobs.yaml")[0] == 1
    (manifests / "team-b" / "broken.yaml").write_text("kind: [unclosed\n")
    code, body, stderr = _review(manifests)
    assert code == 2
    broken = [r for r in body["results"] if r["outcome"] == "error"]
    assert [Path(r["file"]).name for r in broken] == ["broken.yaml"] and broken[0]["index"] == 0
    assert body["summary"]["denied"] == 1 and body["summary"]["allowed"] == 3  # the other files were still read
    assert stderr.strip().splitlines() == [f"trainer-policy review: {body['errors'][0].partition(': ')[2]}"]


def test_review_reads_several_documents_from_stdin():
    text = (MANAGED_BY / "create-disallowed-value.yaml").read_text() + "---\n"
    text += (MANAGED_BY / "create-unset-allowed.yaml").read_text()
    result = run_cli("review", "-", "--objects", UNSET_INVENTORY, "-o", "json", stdin=text)
    body = json.loads(result.stdout)
    assert result.code == 1
    assert [(r["file"], r["index"], r["outcome"]) for r in body["results"]] == [
        ("<stdin>", 1, "denied"),
        ("<stdin>", 2, "allowed"),
    ]


def test_review_text_ends_with_a_summary_table(manifests: Path):
    result = run_cli("review", manifests, "--objects", UNSET_INVENTORY)
    lines = result.stdout.strip().splitlines()
    assert result.code == 1
    assert lines[-1] == "4 objects: 3 allowed, 1 denied, 0 errors"
    header = next(i for i, line in enumerate(lines) if line.startswith("FILE "))
    assert lines[header].split() == ["FILE", "DOC", "KIND", "NAME", "RESULT", "VIOLATIONS"]
    assert lines[header + 1].split()[1:] == ["1", "TrainJob", "team-a/job", "denied", "1"]
    assert f"{manifests / 'jobs.yaml'}#1 TrainJob team-a/job: denied" in lines


def _junit(text: str) -> ET.Element:
    JUNIT.validate(text)
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    for key in ("tests", "failures", "errors"):
        assert int(root.get(key)) == sum(int(s.get(key)) for s in root.iter("testsuite")), key
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in cases)
    return root


def test_review_junit_is_valid_and_a_denial_is_a_failure(manifests: Path):
    (manifests / "team-b" / "broken.yaml").write_text("kind: [unclosed\n")
    result = run_cli("review", manifests, "--objects", UNSET_INVENTORY, "-o", "junit")
    assert result.code == 2
    root = _junit(result.stdout)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    suites = {Path(s.get("name")).relative_to(manifests).as_posix(): s for s in root.iter("testsuite")}
    assert list(suites) == ["jobs.yaml", "team-b/broken.yaml", "team-b/job.yml"]
    first = suites["jobs.yaml"].find("testcase")
    assert first.get("name") == "#1 TrainJob team-a/job"
    assert "trainjob-managed-by" in first.find("failure").get("message")
    assert suites["team-b/broken.yaml"].find("testcase/error") is not None


def test_review_of_one_document_keeps_its_report(tmp_path: Path):
    result = run_cli("review", MANAGED_BY / "create-disallowed-value.yaml", "-o", "json")
    assert set(json.loads(result.stdout)) == {"allowed", "violations"}
    junit = run_cli("review", MANAGED_BY / "create-disallowed-value.yaml", "-o", "junit")
    assert junit.code == 1 and _junit(junit.stdout).get("failures") == "1"


@pytest.fixture
def failing_suite(tmp_path: Path) -> Path:
    """A copy of one rule's folder whose suite expects one violation too many in one case."""
    folder = tmp_path / "trainjob-name"
    shutil.copytree(PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-name", folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    case = next(c for c in suite["tests"][0]["cases"] if c["assertions"] == [{"violations": "no"}])
    case["assertions"] = [{"violations": 1}]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
    return folder


def test_test_junit_is_valid_with_one_suite_per_folder(failing_suite: Path):
    shipped = PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-managed-by"
    result = run_cli("test", failing_suite, shipped, "-o", "junit")
    assert result.code == 1
    root = _junit(result.stdout)
    names = [s.get("name") for s in root.iter("testsuite")]
    assert names == [str(failing_suite), "bundles/gatekeeper/v2.0/trainjob-managed-by"]
    failures = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert len(failures) == 1 and failures[0].get("classname").endswith("suite.yaml:trainjob-name")
    # stdout is the XML alone; the closing line goes to stderr
    assert result.stderr.splitlines()[0] == f"{int(root.get('tests')) - 1} passed, 1 failed"


def test_test_json_and_summary_table(failing_suite: Path):
    result = run_cli("test", failing_suite, "-o", "json")
    body = json.loads(result.stdout)
    assert result.code == 1 and body["failed"] == 1 and body["passed"] == len(body["tests"]) - 1
    assert {t["folder"] for t in body["tests"]} == {str(failing_suite)}
    text = run_cli("test", failing_suite, PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-name", "--quiet")
    lines = text.stdout.strip().splitlines()
    header = lines.index(next(line for line in lines if line.startswith("FOLDER")))
    assert lines[header].split() == ["FOLDER", "PASSED", "FAILED"]
    assert lines[header + 1].split()[1:] == [str(body["passed"]), "1"]
    shipped = lines[header + 2].split()
    assert shipped[0] == "bundles/gatekeeper/v2.0/trainjob-name" and shipped[2] == "0"
    assert lines[-1].endswith(" passed, 1 failed")


def test_podsets_of_a_folder_reports_each_trainjob(tmp_path: Path):
    (one,) = _docs(RUNTIMES / "trainjob-torch-4x8.yaml")
    (two,) = _docs(RUNTIMES / "trainjob-mpi-3.yaml")
    folder = tmp_path / "jobs"
    _multi(folder / "both.yaml", one, two)
    _multi(folder / "runtimes.yaml", *_docs(RUNTIMES / "runtimes.yaml"))  # runtimes among the inputs count
    result = run_cli("podsets", folder, "-o", "json")
    assert result.code == 0, result.stderr
    reports = json.loads(result.stdout)
    assert [(Path(r["file"]).name, r["index"], r["trainJob"]) for r in reports] == [
        ("both.yaml", 1, f"team-a/{one['metadata']['name']}"),
        ("both.yaml", 2, f"team-a/{two['metadata']['name']}"),
    ]
    (folder / "orphan.yaml").write_text(yaml.safe_dump({**one, "spec": {"runtimeRef": {"name": "nowhere"}}}))
    result = run_cli("podsets", folder)
    assert result.code == 2 and len(result.stderr_lines) == 1 and "orphan.yaml#1" in result.stderr
    assert f"{folder / 'both.yaml'}#2" in result.stdout
