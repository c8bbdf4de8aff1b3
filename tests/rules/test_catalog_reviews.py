"""Every case of every rule and generated profile, through `trainer-policy review` (or, where the CLI cannot
express the case — audit input, a literal external_data answer — through Gatekeeper's runner on the same bundle).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeflow_trainer_policy.catalog import load_catalog
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule
from kubeflow_trainer_policy.gatekeeper.external_data import ProviderAnswer, ProviderItem
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest
from kubeflow_trainer_policy.profiles import generated_profiles
from kubeflow_trainer_policy.render import requests
from tests.rules.helpers import review_cli, runner_review, variant_of

RULES = {rule.id: rule for rule in load_catalog()}

CASES = [
    pytest.param(profile.name, rule, case, id=f"{profile.name}-{rule.id}-{case.name}")
    for profile in generated_profiles()
    for rule in load_catalog()
    for case in rule.cases(profile)
]


class LiteralAnswer:
    """A provider client whose builtin answer is the case's literal external_data object."""

    def __init__(self, answer: dict[str, Any]):
        self.answer = answer

    def fetch(self, keys: list[str]) -> ProviderAnswer:
        if self.answer.get("system_error"):
            return ProviderAnswer(int(self.answer.get("status_code") or 500), system_error=self.answer["system_error"])
        items = [ProviderItem(k, v, "") for k, v in self.answer.get("responses") or []]
        items += [ProviderItem(k, None, str(e)) for k, e in self.answer.get("errors") or []]
        return ProviderAnswer(200, tuple(items))


def _expected(case: Case) -> list[str]:
    return sorted([e.msg for e in case.expected] + [e.msg for _, e in case.also_in_bundle])


def _by_constraint(rule: Rule, case: Case) -> list[tuple[str, str]]:
    """(constraint, msg) of every violation the whole bundle reports: the rule's own and the other rules'."""
    own = [(rule.id, e.msg) for e in case.expected]
    return sorted(own + [(other, e.msg) for other, e in case.also_in_bundle])


def _denied(rule: Rule, case: Case) -> bool:
    """Violations of a `warn` Constraint are reported but the request is allowed."""
    if case.expected and rule.enforcement_action == "deny":
        return True
    return any(RULES[other].enforcement_action == "deny" for other, _ in case.also_in_bundle)


def _cli_expressible(case: Case) -> bool:
    return case.operation != AUDIT and case.external_data is None


@pytest.mark.parametrize(("profile", "rule", "case"), CASES)
def test_case(tmp_path, profile: str, rule: Rule, case: Case):
    if _cli_expressible(case):
        parameters = None if case.parameters is None else {rule.id: case.parameters}
        result = review_cli(
            tmp_path,
            requests.admission_review(case),
            objects=list(case.cluster),
            profile=profile,
            parameters=parameters,
            variant=variant_of(rule),
        )
        assert result.exit_code == (1 if _denied(rule, case) else 0), (result.stderr, result.body)
        assert result.messages == _expected(case)
        violations = result.body["violations"]
        assert sorted((v["constraint"], v["msg"]) for v in violations) == _by_constraint(rule, case)
        for violation in violations:
            assert violation["enforcementAction"] == RULES[violation["constraint"]].enforcement_action
            assert violation["msg"] == "{field}: {type}: {detail}".format(**violation["details"])
        return
    providers = {}
    if case.external_data is not None:
        providers = {name: LiteralAnswer(case.external_data) for name in rule.data.external_data_providers}
    result = runner_review(
        profile,
        AdmissionRequest(requests.review_input(case)),
        providers=providers,
        objects=list(case.cluster),
        parameters=None if case.parameters is None else {rule.id: case.parameters},
        variant=variant_of(rule),
    )
    assert result.errors == []
    assert sorted(v.msg for v in result.violations) == _expected(case)
    assert result.allowed == (not _denied(rule, case))
