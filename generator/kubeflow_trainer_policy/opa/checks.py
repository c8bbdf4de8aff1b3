"""`python -m kubeflow_trainer_policy.opa.checks [--dist DIR] [ROOT]`: everything the project ships, through the
real OPA of every supported Gatekeeper (tools/versions.json, installed by `make tools`), or $TRAINER_POLICY_OPA
alone. With each OPA:

- policies/ and profiles/: `opa fmt --list` lists nothing; with each profile's lib, `opa check --strict` and
  `opa test` pass under that OPA's own capabilities plus Gatekeeper's external_data, the tests being the
  hand-written ones and every rule's cases as Rego tests, written to build/case-tests/<profile>/;
- the README's `opa test` commands, verbatim from the project root (with profiles/capabilities.json, which must be
  the oldest pinned OPA's capabilities plus external_data);
- every ConstraintTemplate under bundles/: its rego and libs (what Gatekeeper compiles, one template at a time)
  are `opa fmt` output and pass `opa check --strict` (with the capabilities when they call external_data);
- every bundle in DIR: `opa run --bundle` activates it unsigned (--skip-verify) and signed with a key made here
  (signature verified), and its modules are `opa fmt` output and pass `opa check --strict --bundle`.

Each command is printed with its result; the last line counts the problems (exit 1 when there are any)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from kubeflow_trainer_policy import pinned
from kubeflow_trainer_policy.opa import capabilities
from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.opa.toolchain import ToolchainError, opa_binary
from kubeflow_trainer_policy.paths import PROJECT_ROOT
from kubeflow_trainer_policy.render.rego import CAPABILITIES, PROFILES, calls_external_data

CASE_TESTS = "build/case-tests"
TEST_TIMEOUT = "60s"


@dataclass(frozen=True)
class Command:
    args: tuple[str, ...]
    shown: str
    """The command as a user would type it (paths relative to the root, temporary folders named)."""
    expect_no_output: bool = False
    """`opa fmt --list` succeeds but lists the files it would change: any output is a problem."""
    cwd: bool = False
    """Run from the project root (the README's commands name paths relative to it)."""


@dataclass(frozen=True)
class Outcome:
    command: Command
    problem: str | None
    summary: str


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def write_case_tests(root: Path) -> Path:
    """Every rule's cases as Rego tests, per profile, under root/build/case-tests/<profile>/<rule>/."""
    from kubeflow_trainer_policy.catalog import load_rules
    from kubeflow_trainer_policy.profiles import generated_profiles
    from kubeflow_trainer_policy.render.rego_tests import case_tests_path, render_rule_tests

    out = root / CASE_TESTS
    shutil.rmtree(out, ignore_errors=True)
    rules = load_rules(root / "policies")
    for profile in generated_profiles():
        for rule in rules:
            path = out / profile.name / case_tests_path(rule)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render_rule_tests(rule, profile), encoding="utf-8")
    return out


def policy_commands(root: Path, case_tests: Path | None, caps: Path) -> list[Command]:
    """fmt, then per profile check and test, with `caps` (the OPA's own capabilities plus external_data)."""
    policies = root / "policies"
    profiles = sorted(p for p in (root / PROFILES).glob("*") if p.is_dir())
    listed = f"opa fmt --list policies {PROFILES}"
    commands = [Command(("fmt", "--list", str(policies), str(root / PROFILES)), listed, expect_no_output=True)]
    for profile in profiles:
        args = ["--capabilities", str(caps), str(policies), str(profile)]
        shown = f"--capabilities <this OPA's + external_data> policies {_rel(profile, root)}"
        commands.append(Command(("check", "--strict", *args), f"opa check --strict {shown}"))
        built = case_tests / profile.name if case_tests is not None else None
        if built is not None and built.is_dir():
            args.append(str(built))
            shown += f" {_rel(built, root)}"
        # OPA's default of 5 s a test is too short for the limit tests on a loaded 2-core machine.
        commands.append(
            Command(("test", "--timeout", TEST_TIMEOUT, *args), f"opa test --timeout {TEST_TIMEOUT} {shown}")
        )
    return commands


def template_commands(root: Path, scratch: Path, caps: Path) -> list[Command]:
    """Each template's rego and libs as files of a folder of their own (Gatekeeper compiles them together)."""
    commands = []
    templates = sorted((root / "bundles").rglob("template.yaml"))
    for template in templates:
        rel = _rel(template, root)
        folder = scratch / "templates" / rel.replace("/", "__")
        folder.mkdir(parents=True)
        document = yaml.safe_load(template.read_text(encoding="utf-8"))
        source = document["spec"]["targets"][0]["code"][0]["source"]
        modules = [source["rego"], *source.get("libs", [])]
        (folder / "rego.rego").write_text(modules[0], encoding="utf-8")
        for i, lib in enumerate(modules[1:]):
            (folder / f"libs_{i}.rego").write_text(lib, encoding="utf-8")
        external = any(calls_external_data(m) for m in modules)
        extra = ["--capabilities", str(caps)] if external else []
        shown = "--capabilities <this OPA's + external_data> " if external else ""
        commands.append(Command(("check", "--strict", *extra, str(folder)), f"opa check --strict {shown}{rel}"))
    # The formatter reads each file alone: one command for the modules of every template.
    listed = f"opa fmt --list <rego and libs of the {len(templates)} templates>"
    return [Command(("fmt", "--list", str(scratch / "templates")), listed, expect_no_output=True), *commands]


def bundle_commands(dist: Path, root: Path, scratch: Path) -> list[Command]:
    commands = []
    bundles = sorted(dist.glob("*.tar.gz"))
    for bundle in bundles:
        folder = scratch / "bundles" / bundle.name
        folder.mkdir(parents=True)
        with tarfile.open(bundle) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".rego"):
                    target = folder / member.name.lstrip("/").replace("/", "__")
                    target.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
        shown = _rel(bundle, root)
        commands += [
            Command(("run", "--bundle", "--skip-verify", str(bundle)), f"opa run --bundle {shown} (activation)"),
            Command(("check", "--strict", "--bundle", str(bundle)), f"opa check --strict --bundle {shown}"),
        ]
    if bundles:
        listed = f"opa fmt --list <modules of the {len(bundles)} bundles in {_rel(dist, root)}>"
        commands.append(Command(("fmt", "--list", str(scratch / "bundles")), listed, expect_no_output=True))
    return commands


def readme_commands(root: Path) -> list[str]:
    """The `opa test|check|fmt` commands of the README's code blocks, as a user copies them."""
    readme = (root / "README.md").read_text(encoding="utf-8") if (root / "README.md").is_file() else ""
    return re.findall(r"^\s*(opa (?:test|check|fmt) [^\n#]+?)\s*(?:#.*)?$", readme, flags=re.M)


def readme_command_list(root: Path) -> list[Command]:
    """The README's commands verbatim, run from the root (only `opa` is this OPA's path)."""
    return [Command(tuple(shlex.split(line)[1:]), f"{line} (README)", cwd=True) for line in readme_commands(root)]


def signed_bundle_commands(dist: Path, root: Path, scratch: Path) -> list[Command]:
    """Each bundle signed with a key made here, activated with its signature verified (as OPA's runtime does)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from kubeflow_trainer_policy.bundle.archive import read_archive, write_archive
    from kubeflow_trainer_policy.bundle.build import SIGNATURES
    from kubeflow_trainer_policy.bundle.signing import SigningKey, signatures_document, signed_token

    bundles = sorted(dist.glob("*.tar.gz"))
    if not bundles:
        return []
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = scratch / "signing" / "public.pem"
    public.parent.mkdir(parents=True)
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    signer = SigningKey("RS256", key)
    commands = []
    for bundle in bundles:
        files = {name: data for name, data in read_archive(bundle).items() if name != SIGNATURES}
        files[SIGNATURES] = signatures_document(signed_token(files, signer, KEY_ID))
        signed = scratch / "signing" / bundle.name
        write_archive(signed, files)
        flags = ("--verification-key", str(public), "--verification-key-id", KEY_ID, "--signing-alg", "RS256")
        shown = f"opa run --bundle --verification-key <key made here> {_rel(bundle, root)} (signed here, activation)"
        commands.append(Command(("run", "--bundle", *flags, str(signed)), shown))
    return commands


KEY_ID = "trainer-policy-checks"


def _run(command: Command, opa: Path, root: Path) -> Outcome:
    result = run_opa(command.args, check=False, binary=opa, cwd=root if command.cwd else None)
    output = (result.stdout + result.stderr).strip()
    last = output.splitlines()[-1] if output else ""
    if result.returncode != 0:
        return Outcome(command, f"exit {result.returncode}: {output}", last)
    if command.expect_no_output and result.stdout.strip():
        return Outcome(command, f"not opa fmt output: {' '.join(result.stdout.split())}", "")
    return Outcome(command, None, last if command.args[0] == "test" else "ok")


def capability_problems(root: Path, opa: Path) -> list[str]:
    """profiles/capabilities.json must be the capabilities of `opa` (the oldest pinned OPA) plus external_data."""
    path = root / CAPABILITIES
    if not path.is_file() or path.read_text() != capabilities.expected(opa):
        return [
            f"{_rel(path, root)}: not the oldest pinned OPA's capabilities plus external_data "
            "(`python -m kubeflow_trainer_policy.opa.capabilities` rewrites it)"
        ]
    return []


def run_checks(
    root: Path, dist: Path | None, case_tests: Path | None = None, opa: Path | None = None, *, readme: bool = True
) -> tuple[int, list[str]]:
    """(commands run, problems) with one OPA (`opa`, default the build's own), printing each command's result as it
    goes. The capabilities the checks compile with are that OPA's own plus external_data; the README's commands
    run verbatim (with profiles/capabilities.json). `case_tests`: the rules' cases as Rego tests
    (write_case_tests), run with each profile."""
    binary = opa or opa_binary()
    with tempfile.TemporaryDirectory(prefix="trainer-policy-opa-checks-") as tmp:
        scratch = Path(tmp)
        caps = scratch / "capabilities.json"
        caps.write_text(capabilities.expected(binary), encoding="utf-8")
        commands = policy_commands(root, case_tests, caps) + template_commands(root, scratch, caps)
        if readme:
            commands += readme_command_list(root)
        if dist is not None:
            commands += bundle_commands(dist, root, scratch) + signed_bundle_commands(dist, root, scratch)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            outcomes = list(pool.map(lambda c: _run(c, binary, root), commands))
    problems: list[str] = []
    for outcome in outcomes:
        status = "ok  " if outcome.problem is None else "FAIL"
        detail = f": {outcome.summary}" if outcome.summary not in ("", "ok") else ""
        print(f"{status} {outcome.command.shown}{detail}")
        if outcome.problem is not None:
            problems.append(f"{outcome.command.shown}: {outcome.problem}")
    return len(commands), problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubeflow_trainer_policy.opa.checks", description=__doc__)
    parser.add_argument("root", nargs="?", default=str(PROJECT_ROOT), help="project root (default: %(default)s)")
    parser.add_argument("--dist", metavar="DIR", help="also activate and check the bundles in DIR (default: none)")
    args = parser.parse_args(argv)
    try:
        opas = pinned.opas()
    except (pinned.InstallError, ToolchainError) as exc:
        print(f"opa checks: {exc}", file=sys.stderr)
        return 2
    root = Path(args.root)
    case_tests = write_case_tests(root)
    # The file is the oldest pinned OPA's: an opa of one's own ($TRAINER_POLICY_OPA) is not held to it.
    total, problems = 0, capability_problems(root, opas[0].path) if opas[0].version is not None else []
    for opa in opas:
        version = run_opa(["version"], binary=opa.path).stdout.splitlines()[0]
        print(f"== {opa.label}: {opa.path} ({version})")
        count, found = run_checks(root, Path(args.dist) if args.dist else None, case_tests, opa.path)
        total += count
        problems += [f"{opa.label}: {problem}" for problem in found]
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"opa checks: {total} commands on {len(opas)} OPA versions, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
