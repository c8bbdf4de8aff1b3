"""A rule's operations in a profile (`Rule.operations_in`: its page and the README's table say which requests
it judges) are what its template judges: every case it denies is one of those operations (or audit), each of
them denies at least once, and the same request under any other operation is left alone by the rule's
Constraint. Gatekeeper's webhook can be configured to send DELETE and CONNECT too, so the template, not the
webhook configuration, has to keep to them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kubeflow_trainer_policy.catalog import load_catalog
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.profiles import Profile, generated_profiles
from kubeflow_trainer_policy.render import requests
from tests.rules.helpers import bundle, variant_of, with_parameters

ADMISSION_OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


def _denying_cases(rule: Rule, profile: Profile) -> list[Case]:
    """Cases where the rule itself reports, with the provider's answer computed from the cluster."""
    return [c for c in rule.cases(profile) if c.expected and c.external_data is None]


# A rule may report nothing in a profile (deprecation warnings start with v2.1): nothing to replay there.
JUDGING = [(p, r) for p in generated_profiles() for r in load_catalog() if _denying_cases(r, p)]


def _as(case: Case, operation: str) -> AdmissionRequest:
    """The case's request with only its operation changed: same object, and an oldObject where the case has
    none (an UPDATE or DELETE carries one), so nothing but the operation can keep the rule quiet."""
    old_object = case.old_object if case.old_object is not None else case.object
    replay = dataclasses.replace(case, operation=operation, old_object=old_object)
    return AdmissionRequest(requests.review_input(replay))


def _own(result, rule: Rule) -> list[str]:
    return [v.msg for v in result.violations if v.constraint == rule.id]


def test_every_rule_reports_in_some_profile():
    assert {r.id for _, r in JUDGING} == {r.id for r in load_catalog()}


@pytest.mark.parametrize(("profile", "rule"), [pytest.param(p, r, id=f"{p.name}-{r.id}") for p, r in JUDGING])
def test_rule_judges_exactly_its_operations(profile: Profile, rule: Rule):
    cases = _denying_cases(rule, profile)
    operations = rule.operations_in(profile)
    assert set(operations) <= set(rule.operations) <= set(ADMISSION_OPERATIONS), (operations, rule.operations)
    others = [op for op in ADMISSION_OPERATIONS if op not in operations]
    judged: set[str] = set()
    # One runner per set of parameters (the default Constraint's, or a case's own), shared by its cases.
    runners: dict[str, GatekeeperRunner] = {}
    try:
        for case in cases:
            assert case.operation == AUDIT or case.operation in operations, case.name
            judged.add(case.operation)
            parameters = None if case.parameters is None else {rule.id: case.parameters}
            key = json.dumps(parameters, sort_keys=True)
            if key not in runners:
                runners[key] = GatekeeperRunner(with_parameters(bundle(profile.name, variant_of(rule)), parameters), {})
            runner = runners[key]
            for operation in others:
                runner.set_objects(case.cluster)
                result = runner.review(_as(case, operation))
                assert result.errors == [], (case.name, operation)
                assert _own(result, rule) == [], (case.name, operation)
    finally:
        for runner in runners.values():
            runner.close()
    # Every documented operation is shown denying at least once.
    assert set(operations) <= judged, (operations, judged)
