"""The runner reproduces real Gatekeeper's recorded documents, decisions and errors (cases/, see recordings.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubeflow_trainer_policy.errors import InputError, TemplateError
from kubeflow_trainer_policy.gatekeeper.constraint import is_constraint, parse_constraint
from kubeflow_trainer_policy.gatekeeper.policy_set import add_constraint, load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import gator_request
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner, ReviewResult
from kubeflow_trainer_policy_provider.reader import read_documents, read_single
from tests.gatekeeper.conformance.recordings import RecordedCase, load_cases

CASES = load_cases()


def evaluate(case: RecordedCase) -> ReviewResult:
    """The case as gator evaluates it: no external_data builtin, a bare object reviewed as audit."""
    policy_set = load_policy_set([case.folder / "template.yaml"])
    for doc in read_documents(case.folder / "constraint.yaml"):
        if is_constraint(doc.body):
            add_constraint(policy_set, parse_constraint(doc))
    inventory = case.folder / "inventory.yaml"
    objects = [d.body for d in read_documents(inventory)] if inventory.exists() else []
    with GatekeeperRunner(policy_set, objects=objects, external_data=False) as runner:
        return runner.review(gator_request(read_single(case.folder / "review.yaml")))


def canonical(message: Any) -> str:
    return json.dumps(message, sort_keys=True)


def decoded(message: str, like: Any) -> Any:
    return json.loads(message) if not isinstance(like, str) else message


def test_the_recordings_cover_every_kind_of_case():
    kinds = {case.name.split("-")[0] for case in CASES}
    assert kinds == {"input", "match", "action", "template"}
    assert len(CASES) >= 46
    assert sum(1 for c in CASES if c.error_class) >= 4


@pytest.mark.parametrize("case", [c for c in CASES if not c.error_class], ids=lambda c: c.name)
def test_same_violations_as_gatekeeper(case: RecordedCase):
    result = evaluate(case)
    assert result.errors == []
    recorded = case.violations
    ours = [decoded(v.msg, recorded[0]) for v in result.violations] if recorded else [v.msg for v in result.violations]
    assert sorted(map(canonical, ours)) == sorted(map(canonical, recorded))


@pytest.mark.parametrize("case", [c for c in CASES if c.error_class], ids=lambda c: c.name)
def test_same_errors_as_gatekeeper(case: RecordedCase):
    """Where Gatekeeper refuses, we refuse too, with an error of the same class naming the template or object."""
    try:
        result = evaluate(case)
    except (InputError, TemplateError) as exc:
        message = str(exc)
        assert "template conformancebad" in message
    else:
        assert result.violations == []
        (message,) = result.errors
        assert "'job'" in message and "constraint c" in message
    assert case.error_class in message


def test_a_json_echo_is_exact_to_the_number(tmp_path):
    """1.0 becomes 1 and a 20-digit integer a float64, as apimachinery and OPA hand them to a template."""
    (case,) = [c for c in CASES if c.name == "input-bare-odd-values"]
    (violation,) = evaluate(case).violations
    assert '"big":1.2345678901234567e+19' in violation.msg and '"nvidia.com/gpu":1}' in violation.msg
