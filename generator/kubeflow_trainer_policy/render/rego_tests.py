"""A rule's cases as Rego tests of its package, one `test_<case>` per case, for one profile. They are built, not
committed: `trainer-policy test` renders them in memory, `make build` writes them under build/case-tests/ for the
real OPA."""

from __future__ import annotations

import json
from typing import Any

from kubeflow_trainer_policy.catalog.model import Case, Rule
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy.render import requests
from kubeflow_trainer_policy.render.header import header

PROVIDER_FETCH = "data.lib.trainer.jobset_provider.fetch"
"""The function that makes the one external_data call: the tests replace it, never the builtin, so they run on any
OPA that knows external_data's signature (`opa test --capabilities`), Gatekeeper's implementation or not."""


def _rego(value: Any) -> str:
    """A JSON value as a one-line Rego term (JSON is valid Rego); deterministic key order."""
    return json.dumps(value, sort_keys=True)


def _block(value: Any, level: int) -> str:
    """A JSON value as a Rego term laid out as `opa fmt` prints it (format.go groups a collection's entries by
    source line): a collection of two or more entries has one entry per line, indented one tab deeper than
    `level`, each followed by a comma, and its closing bracket at `level`; a collection of one entry stays on
    its opening line (`{"spec": {"containers": [{` opens three at once, and they close together); empty
    collections and scalars are one line."""
    if isinstance(value, dict) and len(value) == 1:
        [(key, item)] = value.items()
        return "{" + json.dumps(key) + ": " + _block(item, level) + "}"
    if isinstance(value, list) and len(value) == 1:
        return "[" + _block(value[0], level) + "]"
    inner = "\t" * (level + 1)
    if isinstance(value, dict) and value:
        entries = [f"{inner}{json.dumps(k)}: {_block(value[k], level + 1)}," for k in sorted(value)]
        return "{\n" + "\n".join(entries) + "\n" + "\t" * level + "}"
    if isinstance(value, list) and value:
        entries = [f"{inner}{_block(v, level + 1)}," for v in value]
        return "[\n" + "\n".join(entries) + "\n" + "\t" * level + "]"
    return _rego(value)


def _expected_set(case: Case) -> str:
    items = [{"msg": e.msg, "details": {"field": e.field, "type": e.type, "detail": e.detail}} for e in case.expected]
    if not items:
        return "set()"
    return "{" + ", ".join(_rego(i) for i in items) + "}"


def _rule_test(rule: Rule, case: Case) -> str:
    payload = {"review": requests.review_input(case), "parameters": requests.parameters(rule, case)}
    # opa fmt keeps the first `with` on its expression's line and puts each further one on a line of its own,
    # one level deeper.
    mocks = [f" with input as {_block(payload, 1)}"]
    if case.cluster:
        mocks.append(f"\t\twith data.inventory as {_block(requests.inventory(case), 2)}")
    for provider in rule.data.external_data_providers[:1]:
        answer = requests.external_data_answer(case, provider)
        mocks.append(f"\t\twith {PROVIDER_FETCH} as {_block(answer, 2)}")
    return (
        f"# {' '.join(case.description.split())}\n"
        f"test_{case.name} if {{\n"
        "\tresult := violation" + "\n".join(mocks) + "\n"
        f"\tresult == {_expected_set(case)}\n"
        "}\n"
    )


def render_rule_tests(rule: Rule, profile: Profile) -> str:
    tests = "\n".join(_rule_test(rule, case) for case in rule.cases(profile))
    source = f"policies/{rule.id}/cases.py (profile {profile.name})"
    return f"{header(source)}\npackage {rule.package}\n\n{tests}"


def case_tests_path(rule: Rule) -> str:
    """Where a rule's case tests go in a profile's folder of built tests."""
    return f"{rule.id}/cases_test.rego"
