"""OPA's own tools on what ships: tools/opa (built from OPA 1.4.2's Go packages from Debian, cached) formats,
strict-checks and tests every profile, every template and the capabilities file as the README says a user's
`opa` does; the toolchain fails with one line when it cannot be had."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from kubeflow_trainer_policy.gotools.debian import ArchiveError
from kubeflow_trainer_policy.opa import capabilities
from kubeflow_trainer_policy.opa.checks import run_checks, write_case_tests
from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.opa.toolchain import ENV, PINS, TOOL, Builder, ToolchainError, ensure_built, opa_binary
from kubeflow_trainer_policy.paths import POLICIES_DIR, PROFILES_DIR, PROJECT_ROOT
from kubeflow_trainer_policy.profiles import generated_profiles

PROFILES = [p.name for p in generated_profiles()]


def test_the_tool_is_opa_1_4_2():
    assert run_opa(["version"]).stdout.splitlines()[0] == "Version: 1.4.2"


def _tests_in(folder):
    return sum(len(re.findall(r"^test_\w+ if", p.read_text(), re.M)) for p in folder.rglob("*_test.rego"))


def test_everything_shipped_is_formatted_strict_and_tested_by_the_real_opa(capsys, tmp_path):
    """What `make build` runs (python -m kubeflow_trainer_policy.opa.checks), bundles aside (tests/bundle/): every
    unit test and every rule's cases, as Rego tests, pass on OPA 1.4.2 in each profile."""
    shutil.copytree(PROJECT_ROOT / "policies", tmp_path / "policies")
    shutil.copytree(PROJECT_ROOT / "profiles", tmp_path / "profiles")
    shutil.copytree(PROJECT_ROOT / "bundles", tmp_path / "bundles")
    case_tests = write_case_tests(tmp_path)
    count, problems = run_checks(tmp_path, None, case_tests)
    assert problems == []
    out = capsys.readouterr().out
    templates = list((PROJECT_ROOT / "bundles").rglob("template.yaml"))
    assert count == 1 + len(PROFILES) * 2 + 1 + len(templates)
    unit = _tests_in(POLICIES_DIR)
    for profile in PROFILES:  # every test ran and passed: as many as the modules define
        cases = _tests_in(case_tests / profile)
        assert unit > 100 and cases > 200
        shown = (
            f"opa test --capabilities profiles/capabilities.json policies profiles/{profile} build/case-tests/{profile}"
        )
        assert f"ok   {shown}: PASS: {unit + cases}/{unit + cases}" in out


def _readme_opa_commands() -> list[str]:
    readme = (PROJECT_ROOT / "README.md").read_text()
    return re.findall(r"^\s*(opa (?:test|check|fmt) [^\n#]+?)\s*(?:#.*)?$", readme, flags=re.M)


def test_the_readmes_opa_commands_pass_with_the_tool_standing_in_for_opa():
    commands = _readme_opa_commands()
    for profile in PROFILES:
        assert f"opa test --capabilities profiles/capabilities.json policies/ profiles/{profile}/" in commands
    for command in commands:
        result = run_opa(shlex.split(command)[1:], check=False, cwd=PROJECT_ROOT)
        assert result.returncode == 0, f"{command}: {result.stdout[-500:]}{result.stderr[-500:]}"


def test_plain_opa_test_does_not_compile_the_external_data_variant_without_its_capabilities():
    """Why the command names the capabilities file: OPA's default capabilities have no external_data."""
    result = run_opa(["test", POLICIES_DIR, PROFILES_DIR / "v2.0"], check=False)
    assert result.returncode == 1 and "undefined function external_data" in result.stderr


def test_the_capabilities_file_is_opa_1_4_2s_plus_external_data():
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


@pytest.mark.parametrize(("pin", "missing"), [("opa", "not the pinned 9.9.9*"), ("go", "has no package golang-0.1-go")])
def test_when_debians_archive_has_moved_the_build_says_what_is_missing_in_one_line(tmp_path, pin, missing):
    """A real private apt-get update of Debian unstable, against pins the archive cannot satisfy (as when it has
    moved on): nothing is downloaded, and the one line names the package and how to use an opa of one's own."""
    pins = json.loads(PINS.read_text())
    pins[pin] = {"opa": {**pins["opa"], "version": "9.9.9+"}, "go": {"package": "golang-0.1-go", "version": "0.1."}}[
        pin
    ]
    moved = tmp_path / "debian.json"
    moved.write_text(json.dumps(pins))
    with pytest.raises(ArchiveError, match=re.escape(missing)):
        Builder(TOOL, tmp_path / "cache", moved).build(tmp_path / "cache" / "bin" / "opa")
    assert not (tmp_path / "cache" / "root").exists() or not any((tmp_path / "cache" / "root").rglob("*.go"))
    with pytest.raises(ToolchainError) as raised:
        ensure_built(tmp_path / "cache", moved)
    message = str(raised.value)
    assert "\n" not in message and missing in message and f"set {ENV}=/path/to/opa" in message
