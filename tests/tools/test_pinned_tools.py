"""The real tools at the versions users run (tools/versions.json, installed by `make tools` from the Go module
proxy): every pinned OPA strict-checks every profile and passes the README's `opa test` commands as written; every
pinned gator verifies every profile's suites and reads each profile folder whole; Regal lints the tree with the
project's own rules (.regal/rules), which catch what they claim to; the installer names, in one line, the module
and version the proxy cannot serve."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeflow_trainer_policy.opa import capabilities
from kubeflow_trainer_policy.opa.checks import readme_commands
from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.paths import POLICIES_DIR, PROFILES_DIR, PROJECT_ROOT
from kubeflow_trainer_policy.pinned.install import InstallError, install
from kubeflow_trainer_policy.pinned.versions import (
    GATEKEEPER_MODULE,
    Tool,
    VersionsError,
    load,
    pins,
)
from kubeflow_trainer_policy.profiles import generated_profiles

PROFILES = [p.name for p in generated_profiles()]
OPAS = pins().opas()
GATORS = pins().gators()


def _run(binary: Path, *args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1200
    )


@pytest.mark.parametrize("tool", OPAS, ids=[t.version for t in OPAS])
def test_each_pinned_opa_formats_and_strict_checks_every_profile_and_template(tool: Tool, tmp_path: Path):
    """`opa fmt --list` lists nothing; `opa check --strict` of policies/ with each profile, under that OPA's
    capabilities plus external_data, passes; so does each template's rego and libs (as Gatekeeper compiles them)."""
    binary = install(tool)
    caps = tmp_path / "capabilities.json"
    caps.write_text(capabilities.expected(binary))
    listed = run_opa(["fmt", "--list", POLICIES_DIR, PROFILES_DIR], binary=binary)
    assert listed.stdout == ""
    for profile in PROFILES:
        args = ["check", "--strict", "--capabilities", caps, POLICIES_DIR, PROFILES_DIR / profile]
        result = run_opa(args, check=False, binary=binary)
        assert result.returncode == 0, f"{tool.label} {profile}: {result.stderr[-2000:]}"
    for template in sorted((PROJECT_ROOT / "bundles").glob("gatekeeper*/*/*/template.yaml")):
        source = yaml.safe_load(template.read_text())["spec"]["targets"][0]["code"][0]["source"]
        folder = tmp_path / "t" / "__".join(template.parts[-4:-1])
        folder.mkdir(parents=True)
        for i, text in enumerate([source["rego"], *source["libs"]]):
            (folder / f"m{i}.rego").write_text(text)
        result = run_opa(["check", "--strict", "--capabilities", caps, folder], check=False, binary=binary)
        assert result.returncode == 0, f"{tool.label} {template}: {result.stderr[-2000:]}"


@pytest.mark.parametrize("tool", OPAS, ids=[t.version for t in OPAS])
def test_each_pinned_opa_passes_the_readmes_opa_test_commands_as_written(tool: Tool):
    binary = install(tool)
    commands = readme_commands(PROJECT_ROOT)
    assert len([c for c in commands if c.startswith("opa test ")]) == len(PROFILES)
    for command in commands:
        result = _run(binary, *shlex.split(command)[1:])
        assert result.returncode == 0, f"{tool.label}: {command}: {(result.stdout + result.stderr)[-2000:]}"


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("tool", GATORS, ids=[t.version for t in GATORS])
def test_each_pinned_gator_verifies_every_suite_of_the_profile(tool: Tool, profile: str):
    """The README's command, as written: `gator verify bundles/gatekeeper/<profile>/...`."""
    result = _run(install(tool), "verify", f"bundles/gatekeeper/{profile}/...")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    suites = len(list((PROJECT_ROOT / "bundles" / "gatekeeper" / profile).glob("*/suite.yaml")))
    assert result.stdout.count("\nok\t") + result.stdout.startswith("ok\t") == suites, result.stdout[-3000:]


@pytest.mark.parametrize("tool", GATORS, ids=[t.version for t in GATORS])
def test_gator_test_loads_a_profile_folder_whole(tool: Tool):
    """No template gator cannot compile is left in a profile's folder: `gator test -f` reads every template,
    Constraint and sample in it and reports the samples' violations (exit 1), not a template error. The external-data
    variant's folder is the one gator cannot load (it registers no external_data builtin)."""
    binary = install(tool)
    profile = PROFILES[-1]
    result = _run(binary, "test", "-f", f"bundles/gatekeeper/{profile}/")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "unable to compile" not in output, output[-2000:]
    assert '["trainjob-managed-by"] Message: "spec.managedBy: Invalid' in output
    variant = _run(binary, "test", "-f", f"bundles/gatekeeper-external-data/{profile}/")
    assert variant.returncode != 0
    assert "undefined function external_data" in variant.stdout + variant.stderr


def test_regal_lints_the_tree_and_the_projects_own_rules_pass_their_tests():
    regal = install(pins().regal)
    tested = _run(regal, "test", ".regal/rules")
    assert tested.returncode == 0 and "PASS" in tested.stdout, tested.stdout + tested.stderr
    linted = _run(regal, "lint", "--format", "json", "policies/", "profiles/")
    report = json.loads(linted.stdout)
    errors = [v for v in report.get("violations", []) if v["level"] == "error"]
    assert linted.returncode == 0 and errors == [], errors[:5]
    assert report["summary"]["files_scanned"] == len(list(POLICIES_DIR.rglob("*.rego"))) + len(PROFILES)


BROKEN = "package p\n\nimport data.lib.trainer.violations\n\nviolation contains v if {\n\tv := data.k8s.pods\n}\n"


def test_the_projects_regal_rules_report_a_broken_rule(tmp_path: Path):
    """A rule module without METADATA that reads data Gatekeeper refuses: both project rules report it, as errors
    with their ids, and `regal lint` fails."""
    shutil.copytree(PROJECT_ROOT / ".regal", tmp_path / ".regal")
    module = tmp_path / "policies" / "r" / "src.rego"
    module.parent.mkdir(parents=True)
    module.write_text(BROKEN)
    linted = _run(install(pins().regal), "lint", "--format", "json", "policies/", cwd=tmp_path)
    assert linted.returncode != 0
    found = {(v["category"], v["title"], v["location"]["row"]) for v in json.loads(linted.stdout)["violations"]}
    assert ("gatekeeper", "data-reference", 6) in found
    assert ("trainer", "missing-metadata", 1) in found and ("trainer", "missing-metadata", 5) in found
    module.rename(module.with_name("src_test.rego"))  # tests are exempt from both
    linted = _run(install(pins().regal), "lint", "--format", "json", "policies/", cwd=tmp_path)
    titles = {v["title"] for v in json.loads(linted.stdout)["violations"]}
    assert not titles & {"data-reference", "missing-metadata"}


def test_a_version_the_proxy_cannot_serve_fails_in_one_line_naming_module_and_version(tmp_path: Path):
    """A real request to the module proxy for a gator it refuses (Gatekeeper v3.22.2's source): one line, nothing
    left in the cache."""
    tool = Tool("gator", GATEKEEPER_MODULE, f"{GATEKEEPER_MODULE}/cmd/gator", "v3.22.2")
    with pytest.raises(InstallError) as raised:
        install(tool, tmp_path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"cannot install {GATEKEEPER_MODULE}/cmd/gator@v3.22.2 from the Go module proxy: ")
    assert not (tmp_path / "gator" / "v3.22.2").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"gatekeeper": []}, "gatekeeper: expected a non-empty list"),
        ({"gatekeeper": [{"release": "3.20", "version": "3.20.1", "opa": "v1.7.1"}]}, "gatekeeper[0].version"),
        ({"gatekeeper": [{"release": "3.20", "version": "v3.20.1", "opa": "v1.7.1"}], "regal": "v1"}, "conftest"),
    ],
)
def test_a_malformed_versions_file_is_one_line_naming_file_and_field(tmp_path: Path, body: dict, field: str):
    path = tmp_path / "versions.json"
    path.write_text(json.dumps(body))
    with pytest.raises(VersionsError) as raised:
        load(path)
    assert str(raised.value).startswith(f"{path}: ") and field in str(raised.value)


def test_the_readmes_supported_versions_table_is_the_pinned_table():
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme.split("### Supported Gatekeeper versions", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `v")]
    rows = [[c.strip().strip("`") for c in line.strip("|").split("|")] for line in table]
    expected = [[f"v{r.release}", r.version, r.opa] for r in pins().gatekeeper]
    assert [row[:3] for row in rows] == expected


def _readme_conftest_block() -> list[str]:
    readme = (PROJECT_ROOT / "README.md").read_text()
    block = readme.split("**In CI with conftest.**", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


REVIEW_FLAGS = ("--profile", "v2.0", "-o", "json")


def _review_denials(sample: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", "review", str(sample), *REVIEW_FLAGS],
        capture_output=True,
        text=True,
        check=False,
    )
    violations = json.loads(result.stdout)["violations"]
    return sorted(f"[{v['constraint']}] {v['msg']}" for v in violations if v["enforcementAction"] == "deny")


def test_conftest_runs_the_built_bundle_as_the_readme_says(tmp_path: Path):
    """The README's conftest commands, with the pinned conftest, on the v2.0 bundle: each AdmissionReview sample
    of a rule that reads no cluster state fails on exactly the lines `trainer-policy review` denies with; a bare
    manifest fails with the one line the README names."""
    from kubeflow_trainer_policy.bundle.archive import write_archive
    from kubeflow_trainer_policy.bundle.build import build_bundle
    from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir

    conftest = install(pins().conftest)
    (tmp_path / "dist").mkdir()
    write_archive(
        tmp_path / "dist" / "kubeflow-trainer-policy-v2.0.tar.gz",
        build_bundle(gatekeeper_bundle_dir("v2.0"), "v2.0", "0.0.0").files,
    )
    unpack, command = _readme_conftest_block()
    assert subprocess.run(unpack, shell=True, cwd=tmp_path, check=False).returncode == 0
    words = shlex.split(command)
    assert words[0] == "conftest" and words[-1] == "admission-review.yaml"
    samples = sorted((gatekeeper_bundle_dir("v2.0") / "runtime-reserved-replicas" / "samples").glob("*.yaml"))
    reviews = [s for s in samples if "kind: AdmissionReview" in s.read_text()]
    assert len(reviews) >= 5
    outcomes = set()
    for sample in reviews:
        result = _run(conftest, *words[1:-1], "--no-color", "--output", "json", str(sample), cwd=tmp_path)
        (report,) = json.loads(result.stdout)
        failures = sorted(f["msg"] for f in report.get("failures") or [])
        assert failures == _review_denials(sample), sample.name
        assert result.returncode == (1 if failures else 0), sample.name
        outcomes.add(bool(failures))
    assert outcomes == {True, False}
    bare = tmp_path / "trainjob.yaml"
    bare.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: default}\n"
        "spec: {runtimeRef: {name: torch}}\n"
    )
    result = _run(conftest, *words[1:-1], "--no-color", "--output", "json", str(bare), cwd=tmp_path)
    (report,) = json.loads(result.stdout)
    assert result.returncode == 1
    assert [f["msg"] for f in report["failures"]] == [
        "input has no AdmissionRequest: give input.request (an AdmissionReview) or input.review"
    ]
