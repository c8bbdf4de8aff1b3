"""CEL == Rego: every case of every profile of every rule that carries CEL, and the fuzz strategies, judged by the
Rego and by the CEL of the template the profile's bundle ships, the CEL under Gatekeeper's K8sNativeValidation
engine (tools/cel, Kubernetes' own admission-policy code), within Gatekeeper's cost budget for one evaluation."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.cel import gatekeeper
from kubeflow_trainer_policy.render import requests
from tests.cel.helpers import admissible, cel_rules, differences, ints_fit, profiles, session, shipped_templates
from tests.rules import test_fuzz_policies as fuzz

PROFILES = profiles()


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_case_cel_equals_rego_and_the_case(profile):
    reviews, expected = [], []
    for rule, _ in cel_rules():
        for case in rule.cases(profile):
            reviews.append((rule, requests.review_input(case), requests.parameters(rule, case)))
            expected.append(sorted(e.msg for e in case.expected))
    assert len({rule.id for rule, _, _ in reviews}) == len(cel_rules())
    assert differences(profile, reviews) == []
    outcomes = gatekeeper.evaluate(
        [gatekeeper.Review(rule, review, parameters) for rule, review, parameters in reviews],
        shipped_templates(profile),
        session(),
    )
    assert [sorted(o.violations) for o in outcomes] == expected
    assert any(o.violations for o in outcomes) and all(0 < o.cost <= gatekeeper.PER_CALL_LIMIT for o in outcomes)


FUZZ_EXAMPLES = int(os.environ.get("TRAINER_POLICY_CEL_FUZZ_EXAMPLES", "40"))
"""Examples per fuzz strategy: bounded in `make test`; the long run (docs/cel.md) raises it. The catalog cases are
judged in full either way."""
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def _fuzz_review(operation: Any, obj: Any, old: Any) -> dict[str, Any]:
    review = fuzz._review(operation, obj, old)
    if operation is None:  # audit: Gatekeeper's review has operation "" and oldObject null
        review["operation"], review["oldObject"] = "", None
    return review


def _check(operation: Any, obj: Any, old: Any, parameters: Any) -> None:
    assume(admissible(obj) and (old is None or admissible(old)))
    assume(isinstance(parameters, dict) and ints_fit(parameters))
    review = _fuzz_review(operation, obj, old)
    for profile in PROFILES:
        batch = [(rule, review, parameters) for rule, _ in cel_rules()]
        assert differences(profile, batch) == []


@FUZZ
@given(
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", None]),
    obj=fuzz.OBJECTS,
    old=fuzz.OBJECTS | st.none(),
    parameters=fuzz.PARAMETERS,
)
def test_malformed_objects_cel_equals_rego(operation, obj, old, parameters):
    _check(operation, obj, old, parameters)


@FUZZ
@given(operation=st.sampled_from(["CREATE", "UPDATE", None]), obj=fuzz.TRAINJOBS, old=fuzz.TRAINJOBS | st.none())
def test_trainjobs_cel_equals_rego(operation, obj, old):
    _check(operation, obj, old, {})


@FUZZ
@given(
    operation=st.sampled_from(["CREATE", "UPDATE", None]),
    kind=st.sampled_from(["TrainingRuntime", "ClusterTrainingRuntime"]),
    spec=fuzz.RUNTIME_SPEC,
    old_spec=fuzz.RUNTIME_SPEC,
    labels=st.dictionaries(st.sampled_from(["trainer.kubeflow.org/support", "a"]), st.sampled_from(["deprecated", ""]))
    | st.just({"trainer.kubeflow.org/webhook-validation": "disabled"}),
    name=st.sampled_from(["rt", "old-runtime", "a.b-c"]),
)
def test_runtimes_cel_equals_rego(operation, kind, spec, old_spec, labels, name):
    def runtime(s: Any) -> dict[str, Any]:
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": kind,
            "metadata": {"name": name, "labels": labels},
            "spec": s,
        }

    _check(operation, runtime(spec), runtime(old_spec), {})


@FUZZ
@given(
    suspend=st.sampled_from([True, False, None, "true", 1]),
    old_overrides=fuzz.OVERRIDES | fuzz.SPEC_VALUE,
    new_overrides=fuzz.OVERRIDES | fuzz.SPEC_VALUE,
    old_spec=fuzz._trainjob_spec(fuzz.RUNTIME_REF),
    new_spec=fuzz._trainjob_spec(fuzz.RUNTIME_REF),
)
def test_trainjob_updates_cel_equals_rego(suspend, old_overrides, new_overrides, old_spec, new_spec):
    def trainjob(spec: Any, overrides: Any) -> dict[str, Any]:
        fields = ("podSpecOverrides", "podTemplateOverrides", "runtimePatches")
        return fuzz.trainjob_with_overrides({**spec, "suspend": suspend}, overrides, fields)

    _check("UPDATE", trainjob(new_spec, new_overrides), trainjob(old_spec, old_overrides), {})


def test_two_entries_with_one_key_are_the_one_input_where_cel_numbers_otherwise_and_admission_never_sees_it():
    """The CEL numbers a replicated job (or runtime patch) by the first entry with its name (manager), indexOf in
    Kubernetes 1.30's lists library, where Rego numbers each entry: two jobs of one name both get index 0. The
    Trainer's CRDs declare these lists listType=map, so the API server refuses such an object before admission,
    and the fuzz does not draw one (admissible); a list with distinct names is drawn and numbered alike."""
    job = {
        "name": "node",
        "replicas": 2,
        "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}},
    }

    def runtime(jobs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "rt"},
            "spec": {"template": {"spec": {"replicatedJobs": jobs}}},
        }

    (rule,) = [r for r, _ in cel_rules() if r.id == "runtime-reserved-replicas"]
    one_name = runtime([job, {**job, "replicas": 3}])
    distinct = runtime([job, {**job, "name": "other"}])
    assert not admissible(one_name) and admissible(distinct)
    replicas = "spec.template.spec.replicatedJobs[{}].replicas: Invalid: always must be 1"
    profile = next(p for p in PROFILES if p.name == "v2.0")  # no container check: replicas messages only
    (difference,) = differences(profile, [(rule, _fuzz_review("CREATE", one_name, None), {})])
    assert difference.rego == [replicas.format(0), replicas.format(1)]
    assert difference.cel == [replicas.format(0), replicas.format(0)]
    assert differences(profile, [(rule, _fuzz_review("CREATE", distinct, None), {})]) == []
    patches = [{"manager": "m", "trainingRuntimeSpec": {}}, {"manager": "m"}]
    assert not admissible({"kind": "TrainJob", "spec": {"runtimePatches": patches}})
    jobs = {"template": {"spec": {"replicatedJobs": [{"name": "a"}, {"name": "a", "template": {}}]}}}
    assert not admissible({"kind": "TrainJob", "spec": {"runtimePatches": [{"trainingRuntimeSpec": jobs}]}})
