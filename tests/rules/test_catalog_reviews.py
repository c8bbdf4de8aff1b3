"""Every case of every rule and generated profile, through `trainer-policy review` (or, where the CLI cannot
express the case — audit input, a literal external_data answer — through Gatekeeper's runner on the same bundle).
Cases that share the cluster objects and parameters are reviewed by one process, as a folder of manifests is in
CI: each case still checks its own outcome, violations and messages.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kubeflow_trainer_policy.catalog import load_catalog
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule
from kubeflow_trainer_policy.gatekeeper.external_data import ProviderAnswer, ProviderItem
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest
from kubeflow_trainer_policy.profiles import generated_profiles
from kubeflow_trainer_policy.render import requests
from tests.rules.helpers import Reviewed, review_cli_many, runner_review, variant_of

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


def _parameters(rule: Rule, case: Case) -> dict[str, Any] | None:
    return None if case.parameters is None else {rule.id: case.parameters}


def _batch_key(profile: str, rule: Rule, case: Case) -> tuple[str, str | None, str, str]:
    """What one `review` process shares: the profile and install, the cluster objects and the parameters."""
    return profile, variant_of(rule), json.dumps(case.cluster, sort_keys=True), json.dumps(_parameters(rule, case))


BATCHES: dict[tuple[str, str | None, str, str], list[tuple[Rule, Case]]] = {}
for _profile, _rule, _case in (p.values for p in CASES):
    if _cli_expressible(_case):
        BATCHES.setdefault(_batch_key(_profile, _rule, _case), []).append((_rule, _case))


@functools.cache
def _reviewed(key: tuple[str, str | None, str, str]) -> tuple[int, dict[str, Reviewed]]:
    """Every case of a batch in one `trainer-policy review` of a folder, run once per worker."""
    profile, variant, _, _ = key
    cases = BATCHES[key]
    rule, case = cases[0]
    reviews = {f"{r.id}--{c.name}": requests.admission_review(c) for r, c in cases}
    folder = Path(tempfile.mkdtemp(prefix="catalog-reviews-"))
    try:
        return review_cli_many(
            folder,
            reviews,
            objects=list(case.cluster),
            profile=profile,
            parameters=_parameters(rule, case),
            variant=variant,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize(("profile", "rule", "case"), CASES)
def test_case(profile: str, rule: Rule, case: Case):
    if _cli_expressible(case):
        key = _batch_key(profile, rule, case)
        code, results = _reviewed(key)
        assert code == (1 if any(_denied(r, c) for r, c in BATCHES[key]) else 0)
        result = results[f"{rule.id}--{case.name}"]
        assert result.outcome == ("denied" if _denied(rule, case) else "allowed"), result
        assert result.messages == _expected(case)
        assert sorted((v["constraint"], v["msg"]) for v in result.violations) == _by_constraint(rule, case)
        for violation in result.violations:
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
