"""Profiles v2.1 and v2.2 are not shipped yet, but they are data: the same templates render for them and the
rules' cases hold, evaluated from in-memory ConstraintTemplates (nothing written to bundles/)."""

from __future__ import annotations

import pytest

from generator.catalog import load_catalog
from generator.catalog.model import AUDIT, Case, Rule
from generator.engine.rego_ast import RegoParser
from generator.gatekeeper.constraint import parse_constraint
from generator.gatekeeper.documents import Document
from generator.gatekeeper.external_data import InProcessProvider
from generator.gatekeeper.policy_set import PolicySet, add_constraint
from generator.gatekeeper.review import AdmissionRequest
from generator.gatekeeper.runner import GatekeeperRunner
from generator.gatekeeper.template import parse_template
from generator.profiles import PROFILES, Profile
from generator.render import gatekeeper, requests
from provider.handler import ProviderHandler
from provider.sources import StaticJobSetSource
from tests.rules.test_catalog_reviews import LiteralAnswer

FUTURE = [p for p in PROFILES.values() if not p.generated]


def _runner(rule: Rule, profile: Profile, case: Case) -> GatekeeperRunner:
    template = parse_template(Document("memory", gatekeeper.constraint_template(rule, profile)), RegoParser())
    policy_set = PolicySet({template.kind: template}, [], {})
    body = gatekeeper.constraint(rule)
    if case.parameters is not None:
        body["spec"]["parameters"] = case.parameters
    add_constraint(policy_set, parse_constraint(Document("memory", body)))
    providers = {}
    for name in rule.data.external_data_providers:
        if case.external_data is not None:
            providers[name] = LiteralAnswer(case.external_data)
        else:
            providers[name] = InProcessProvider(ProviderHandler(StaticJobSetSource(case.cluster)).handle)
    return GatekeeperRunner(policy_set, providers, objects=case.cluster)


@pytest.mark.parametrize("profile", FUTURE, ids=[p.name for p in FUTURE])
@pytest.mark.parametrize("rule", load_catalog(), ids=[r.id for r in load_catalog()])
def test_future_profile_fits_the_templates(profile: Profile, rule: Rule):
    assert FUTURE, "every profile is generated: this test has nothing left to prove"
    for case in rule.cases(profile):
        with _runner(rule, profile, case) as runner:
            result = runner.review(AdmissionRequest(requests.review_input(case)))
        assert result.errors == [], case.name
        assert sorted(v.msg for v in result.violations) == sorted(e.msg for e in case.expected), case.name
        if case.operation != AUDIT and rule.id == "trainjob-override-mutability":
            for v in result.violations:
                assert v.details["field"] == profile.override_path
