"""`trainer-policy test` runs a folder's Rego tests the way `opa test` reports them, and it prepares one query for
all of them: preparing a query compiles every loaded module, so a query per test made one profile's run take
minutes (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.paths import POLICIES_DIR, PROFILES_DIR
from kubeflow_trainer_policy.testing.rego_tests import case_test_files, run_rego_tests

MIXED = """\
package mixed

# Rules of different types in one package: a dynamic ref over the package would not type-check.
limits := {"cpu": 2}

names := ["a", "b"]

double(x) := x * 2

test_true if double(2) == 4

test_false if count(names) == 3

test_undefined if input.missing == 1

test_number := 3
"""


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every query and document the engine is asked to evaluate."""
    seen: list[str] = []
    real_query, real_document = EmbeddedOpaEngine.eval_query, EmbeddedOpaEngine.eval_document

    def eval_query(self, query, *args, **kwargs):
        if ".test_" in query:  # a test's evaluation (files are also parsed, and rule metadata read, by queries)
            seen.append(query)
        return real_query(self, query, *args, **kwargs)

    def eval_document(self, path, *args, **kwargs):
        seen.append(f"data.{path}")
        return real_document(self, path, *args, **kwargs)

    monkeypatch.setattr(EmbeddedOpaEngine, "eval_query", eval_query)
    monkeypatch.setattr(EmbeddedOpaEngine, "eval_document", eval_document)
    return seen


@pytest.mark.parametrize("profile", ["v2.0", "v2.3"])
def test_a_profiles_tests_all_pass_in_one_query(profile: str, queries: list[str]):
    outcomes = run_rego_tests([POLICIES_DIR, PROFILES_DIR / profile], extra=case_test_files(profile))
    assert len(outcomes) > 300 and all(o.passed for o in outcomes), [o for o in outcomes if not o.passed][:3]
    assert len(queries) == 1, queries[:3]


def test_failing_undefined_and_non_boolean_tests_are_named_each_with_its_detail(tmp_path: Path, queries: list[str]):
    (tmp_path / "mixed_test.rego").write_text(MIXED)
    outcomes = {o.name: o for o in run_rego_tests(tmp_path)}
    assert set(outcomes) == {f"data.mixed.test_{n}" for n in ("true", "false", "undefined", "number")}
    assert outcomes["data.mixed.test_true"].passed
    assert not outcomes["data.mixed.test_false"].passed and outcomes["data.mixed.test_false"].detail == "undefined"
    assert outcomes["data.mixed.test_undefined"].detail == "undefined"
    assert not outcomes["data.mixed.test_number"].passed and outcomes["data.mixed.test_number"].detail == "value 3"
    # One query for the whole folder; only the three that did not pass are asked again, alone, for their detail.
    assert len(queries) == 4 and sorted(queries[1:]) == [
        "data.mixed.test_false",
        "data.mixed.test_number",
        "data.mixed.test_undefined",
    ], queries
