"""Issue 29, item 4: the runner evaluates builtins as Gatekeeper does. Gatekeeper's Rego driver (frameworks
`constraint/pkg/client/drivers/rego/driver.go`) sets no `rego.StrictBuiltinErrors`, so a builtin that fails
(`to_number("1e400")`, `count(5)`, `1 / 0`) makes its expression undefined and evaluation goes on; the embedded
engine always evaluates strictly. These templates decide differently under the two modes, so `review` must give
Gatekeeper's answer (and say on stderr that a builtin failed), not an engine error."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
from kubeflow_trainer_policy.gatekeeper.policy_set import add_constraint, load_policy_set
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from tests.cli.helpers import run_cli
from tests.gatekeeper.helpers import request, trainjob

REGO = """package k8sbig

big if to_number(input.review.object.spec.cpu) > 64

violation contains {"msg": "over 64"} if big

violation contains {"msg": "not over 64"} if not big

violation contains {"msg": sprintf("%d per node", [per_node])} if {
	per_node := input.review.object.spec.total / input.review.object.spec.nodes
}

violation contains {"msg": sprintf("%d entries", [count(input.review.object.spec.entries)])} if true
"""


def _template() -> dict:
    return {
        "apiVersion": "templates.gatekeeper.sh/v1",
        "kind": "ConstraintTemplate",
        "metadata": {"name": "k8sbig"},
        "spec": {
            "crd": {"spec": {"names": {"kind": "K8sBig"}}},
            "targets": [
                {
                    "target": "admission.k8s.gatekeeper.sh",
                    "code": [{"engine": "Rego", "source": {"version": "v1", "rego": REGO}}],
                }
            ],
        },
    }


CONSTRAINT = {
    "apiVersion": "constraints.gatekeeper.sh/v1beta1",
    "kind": "K8sBig",
    "metadata": {"name": "big"},
    "spec": {"match": {"kinds": [{"apiGroups": ["trainer.kubeflow.org"], "kinds": ["TrainJob"]}]}},
}


@pytest.fixture
def constraints(tmp_path: Path) -> Path:
    path = tmp_path / "constraints.yaml"
    path.write_text(yaml.safe_dump_all([_template(), CONSTRAINT]))
    return path


# spec -> the violations OPA gives without strict builtin errors (what Gatekeeper evaluates)
CASES = [
    ({"cpu": "100", "total": 8, "nodes": 2, "entries": [1, 2]}, ["2 entries", "4 per node", "over 64"]),
    # to_number fails: `big` is undefined, so `not big` holds
    ({"cpu": "1e400", "total": 8, "nodes": 2, "entries": [1]}, ["1 entries", "4 per node", "not over 64"]),
    # division by zero: that violation is undefined; count of a number: that one too
    ({"cpu": "1", "total": 8, "nodes": 0, "entries": 5}, ["not over 64"]),
]


@pytest.mark.parametrize(("spec", "expected"), CASES)
def test_failed_builtins_are_undefined_as_in_gatekeeper(constraints: Path, spec: dict, expected: list[str]) -> None:
    policy_set = load_policy_set([constraints])
    with GatekeeperRunner(policy_set) as runner:
        for _ in range(2):  # the second review reuses the replacements registered by the first
            result = runner.review(request("CREATE", trainjob(**spec)))
            assert result.errors == []
            assert sorted(v.msg for v in result.violations) == expected
    assert bool(result.builtin_failures) == (expected != CASES[0][1])


def test_each_template_alone_is_lenient_too(constraints: Path) -> None:
    """When the combined engine cannot be used, templates are evaluated one by one: the same decisions."""
    policy_set = load_policy_set([constraints])
    add_constraint(policy_set, Constraint("K8sBig", "second", {}, {}, "deny", "test"))
    with GatekeeperRunner(policy_set) as runner:
        runner.combined.close()
        runner.combined = None
        result = runner.review(request("CREATE", trainjob(cpu="1e400", total=8, nodes=0, entries=5)))
    assert result.errors == []
    assert sorted((v.constraint, v.msg) for v in result.violations) == [
        ("big", "not over 64"),
        ("second", "not over 64"),
    ]
    assert any("to_number failed" in f for f in result.builtin_failures)
    assert any("div failed" in f for f in result.builtin_failures)
    assert any("count failed" in f for f in result.builtin_failures)


def test_review_gives_gatekeepers_decision_and_says_a_builtin_failed(constraints: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(trainjob(cpu="1e400", total=8, nodes=2, entries=[])))
    result = run_cli("review", job, "--constraints", constraints, "-o", "json")
    assert result.code == 1, result
    body = yaml.safe_load(result.stdout)
    assert sorted(v["msg"] for v in body["violations"]) == ["0 entries", "4 per node", "not over 64"]
    assert "errors" not in body
    [note] = result.stderr_lines
    assert note.startswith("trainer-policy review: note: to_number failed (")
    assert note.endswith("Gatekeeper treats it as undefined, and so did this review")
