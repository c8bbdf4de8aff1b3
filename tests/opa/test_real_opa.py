"""OPA's own tools on what ships: the real `opa` of the oldest supported Gatekeeper (tools/versions.json, installed
from the Go module proxy) formats, strict-checks and tests every profile, every template and the capabilities file
as the README says a user's `opa` does; a missing opa of one's own is one line. Every other pinned OPA:
tests/tools/."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from kubeflow_trainer_policy.opa import capabilities
from kubeflow_trainer_policy.opa.checks import readme_commands, run_checks, write_case_tests
from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.opa.toolchain import ENV, opa_binary
from kubeflow_trainer_policy.paths import POLICIES_DIR, PROFILES_DIR, PROJECT_ROOT
from kubeflow_trainer_policy.pinned.versions import pins
from kubeflow_trainer_policy.profiles import generated_profiles

PROFILES = [p.name for p in generated_profiles()]


def test_the_build_opa_is_the_oldest_supported_gatekeepers():
    oldest = pins().gatekeeper[0]
    assert run_opa(["version"]).stdout.splitlines()[0] == f"Version: {oldest.opa.removeprefix('v')}"


def _tests_in(folder):
    return sum(len(re.findall(r"^test_\w+ if", p.read_text(), re.M)) for p in folder.rglob("*_test.rego"))


def test_everything_shipped_is_formatted_strict_and_tested_by_the_real_opa(capsys, tmp_path):
    """What `make build` runs with each OPA (python -m kubeflow_trainer_policy.opa.checks), bundles aside
    (tests/bundle/): every unit test and every rule's cases, as Rego tests, pass on the oldest pinned OPA in each
    profile, and so do the README's commands."""
    shutil.copytree(PROJECT_ROOT / "policies", tmp_path / "policies")
    shutil.copytree(PROJECT_ROOT / "profiles", tmp_path / "profiles")
    shutil.copytree(PROJECT_ROOT / "bundles", tmp_path / "bundles")
    shutil.copy(PROJECT_ROOT / "README.md", tmp_path / "README.md")
    case_tests = write_case_tests(tmp_path)
    count, problems = run_checks(tmp_path, None, case_tests)
    assert problems == []
    out = capsys.readouterr().out
    templates = list((PROJECT_ROOT / "bundles").rglob("template.yaml"))
    assert count == 1 + len(PROFILES) * 2 + 1 + len(templates) + len(PROFILES)
    unit = _tests_in(POLICIES_DIR)
    for profile in PROFILES:  # every test ran and passed: as many as the modules define
        cases = _tests_in(case_tests / profile)
        assert unit > 100 and cases > 200
        shown = (
            f"opa test --timeout 60s --capabilities <this OPA's + external_data> policies profiles/{profile} "
            f"build/case-tests/{profile}"
        )
        assert f"ok   {shown}: PASS: {unit + cases}/{unit + cases}" in out


def test_the_readmes_opa_commands_pass():
    commands = readme_commands(PROJECT_ROOT)
    for profile in PROFILES:
        assert (
            f"opa test --timeout 60s --capabilities profiles/capabilities.json policies/ profiles/{profile}/"
            in commands
        )
    for command in commands:
        result = run_opa(shlex.split(command)[1:], check=False, cwd=PROJECT_ROOT)
        assert result.returncode == 0, f"{command}: {result.stdout[-500:]}{result.stderr[-500:]}"


def test_plain_opa_test_does_not_compile_the_external_data_variant_without_its_capabilities():
    """Why the command names the capabilities file: OPA's default capabilities have no external_data."""
    result = run_opa(["test", POLICIES_DIR, PROFILES_DIR / "v2.0"], check=False)
    assert result.returncode == 1 and "undefined function external_data" in result.stderr


def test_the_capabilities_file_is_the_oldest_pinned_opas_plus_external_data():
    shipped = json.loads((PROFILES_DIR / "capabilities.json").read_text())
    current = json.loads(run_opa(["capabilities", "--current"]).stdout)
    assert [b for b in shipped["builtins"] if b["name"] != "external_data"] == sorted(
        current["builtins"], key=lambda b: b["name"]
    )
    assert [b for b in shipped["builtins"] if b["name"] == "external_data"] == [capabilities.EXTERNAL_DATA]
    assert shipped["features"] == current["features"]


def test_the_formatter_lists_what_main_shipped_unformatted(tmp_path):
    """main's lib semantic line and its test layout (with on a line of its own) are not opa fmt output."""
    module = tmp_path / "m.rego"
    module.write_text(
        "package m\n\nf(d0, d1, d2, d6) := x if {\n\tx := ends((d0 | d1) | d2) | d6\n}\n\n"
        'ends(s) := s\n\ntest_t if {\n\tr := f({1}, {2}, {3}, {4})\n\t\twith input as {\n\t\t\t"a": 1,\n\t\t}\n'
        "\tr == {1, 2, 3, 4}\n}\n"
    )
    listed = run_opa(["fmt", "--list", tmp_path])
    assert listed.stdout.strip() == str(module)
    formatted = run_opa(["fmt", module]).stdout
    assert "ends(((d0 | d1) | d2)) | d6" in formatted and "r := f({1}, {2}, {3}, {4}) with input as {" in formatted
    module.write_text(formatted)
    assert run_opa(["fmt", "--list", tmp_path]).stdout == ""


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("import data.other\n\nx := 1\n", "import data.other unused"),
        ("g(a, b) := a\n", "unused argument b"),
        ("f(xs) := y if {\n\tz := 1\n\ty := xs\n}\n", "assigned var z unused"),
        # What Gatekeeper 3.20 and 3.21 (OPA 1.7.1, 1.10.0) refused in lib podsets:
        ("f(xs, k) := {[k, x] | some x in xs}\n", "rego_type_error: match error"),
    ],
)
def test_strict_mode_and_the_type_checker_are_opas(tmp_path, body, error):
    module = tmp_path / "m.rego"
    module.write_text(f"package m\n\n{body}")
    result = run_opa(["check", "--strict", module], check=False)
    assert result.returncode == 1 and error in result.stderr


def test_a_missing_opa_of_the_users_own_is_one_line(tmp_path):
    """bundle build activates each bundle in the real OPA: with $TRAINER_POLICY_OPA naming nothing, exit 2, one line."""
    env = {"PATH": "/usr/bin:/bin", ENV: str(tmp_path / "no-opa"), "HOME": str(tmp_path)}
    build = ["bundle", "build", "--profile", "v2.0", "--output-dir", str(tmp_path / "dist")]
    proc = subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *build],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert f"{ENV}={tmp_path / 'no-opa'} is not an executable file" in line
    assert not (tmp_path / "dist").exists()


def test_an_opa_of_the_users_own_stands_in(tmp_path, monkeypatch):
    own = tmp_path / "opa"
    own.symlink_to(opa_binary())
    monkeypatch.setenv(ENV, str(own))
    opa_binary.cache_clear()
    try:
        assert opa_binary() == own
        assert run_opa(["fmt", "--list", POLICIES_DIR]).stdout == ""
    finally:
        monkeypatch.delenv(ENV)
        opa_binary.cache_clear()
