"""`trainer-policy review --engine`: each template judged by the engine Gatekeeper would run (rego before 3.18;
auto, K8sNativeValidation where the template carries it, from 3.18; cel, only the templates that carry it), the
CEL by Kubernetes' own admission-policy code (tools/cel), through the real CLI on the bundles' own samples."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kubeflow_trainer_policy.profiles import generated_profiles
from tests.cel.helpers import cel_rules
from tests.cli.helpers import PROJECT_ROOT, assert_error, run_cli, run_process

PROFILES = [p.name for p in generated_profiles()]


def _samples(profile: str) -> list[Path]:
    return [PROJECT_ROOT / "bundles/gatekeeper" / profile / rule.id / "samples" for rule, _ in cel_rules()]


def _decisions(stdout: str) -> list[tuple[str, int, str, list[tuple[str, str, str]]]]:
    body = json.loads(stdout)
    return [
        (
            r["file"],
            r["index"],
            r["outcome"],
            sorted((v["constraint"], v["enforcementAction"], v["msg"]) for v in r["violations"]),
        )
        for r in body["results"]
    ]


def _details(stdout: str) -> list[Any]:
    return [v["details"] for r in json.loads(stdout)["results"] for v in r["violations"]]


@pytest.mark.parametrize("profile", PROFILES)
def test_auto_judges_every_cel_rules_samples_as_rego_does(profile: str) -> None:
    """Every sample of the six CEL rules, reviewed against the whole profile bundle: with --engine auto the CEL rules'
    templates are judged by their K8sNativeValidation entry, and every object gets the same outcome and the same
    messages as with the Rego (the details differ: a CEL validation yields a message only)."""
    samples = _samples(profile)
    rego = run_cli("review", *samples, "--profile", profile, "-o", "json")
    auto = run_cli("review", *samples, "--profile", profile, "-o", "json", "--engine", "auto")
    assert rego.code == auto.code == 1, (rego.stderr, auto.stderr)
    assert _decisions(auto.stdout) == _decisions(rego.stdout)
    outcomes = [outcome for _, _, outcome, _ in _decisions(auto.stdout)]
    assert "denied" in outcomes and "allowed" in outcomes
    assert any(d == {} for d in _details(auto.stdout)) and all(d != {} for d in _details(rego.stdout))


def test_cel_leaves_out_the_rego_only_templates_and_says_so() -> None:
    """An unsupported runtime kind is denied by trainjob-runtime-ref, a Rego-only rule: --engine cel does not
    evaluate it (as the standalone ValidatingAdmissionPolicies would not), and names it on stderr."""
    sample = PROJECT_ROOT / "bundles/gatekeeper/v2.3/trainjob-runtime-ref/samples/unsupported-runtime-kind.yaml"
    rego = run_cli("review", sample, "--profile", "v2.3")
    assert rego.code == 1 and "unsupported runtime: JobSet.jobset.x-k8s.io" in rego.stdout, rego
    cel = run_cli("review", sample, "--profile", "v2.3", "--engine", "cel")
    assert cel.code == 0 and cel.stdout == "allowed\n", cel
    (note,) = cel.stderr_lines
    assert note.startswith("trainer-policy review: note: --engine cel: not evaluated, their templates carry no ")
    assert "trainjob-runtime-ref" in note and "trainjob-managed-by" not in note


def test_cel_is_built_or_found_only_when_asked_for(tmp_path: Path) -> None:
    """A real process whose $TRAINER_POLICY_CEL names no evaluator: --engine rego never looks for one; --engine auto
    exits 2 with one line naming the variable."""
    sample = PROJECT_ROOT / "bundles/gatekeeper/v2.3/runtime-reserved-replicas/samples/trainer-two-replicas.yaml"
    env = {**os.environ, "TRAINER_POLICY_CEL": str(tmp_path / "no-cel")}
    rego = run_process("review", sample, "--profile", "v2.3", env=env)
    assert rego.code == 1 and "always must be 1" in rego.stdout, rego
    auto = run_process("review", sample, "--profile", "v2.3", "--engine", "auto", env=env)
    assert_error(auto, "trainer-policy review: --engine: CEL needs the tools/cel evaluator", "TRAINER_POLICY_CEL=")
