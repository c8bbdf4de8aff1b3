"""The budget template never errors, whatever the TrainJob, the synced runtimes and the Constraint's limits:
malformed runtimeRefs, inventories of odd shapes, runtimes with wrong types, limits that are not quantities."""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.gatekeeper.runner import CompiledTemplate
from generator.profiles import generated_profiles
from tests.podsets.test_differential import QUANTITY, runtime, trainjob
from tests.rules.helpers import bundle
from tests.rules.test_fuzz_policies import VALUES

KIND = "TrainerTrainJobResourceBudget"
API = "trainer.kubeflow.org/v1alpha1"
REF = (
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["rt", "", 5, None]),
            "kind": st.sampled_from(["TrainingRuntime", "ClusterTrainingRuntime", "JobSet", "", None, 3]),
            "apiGroup": st.sampled_from(["trainer.kubeflow.org", "x.io", None, ""]),
        },
    )
    | VALUES
)


@st.composite
def trainjob_with_ref(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(VALUES)
    obj = draw(trainjob())
    obj["spec"]["runtimeRef"] = draw(REF)
    obj["metadata"] = draw(st.sampled_from([{"name": "job", "namespace": "team-a"}, {"name": "job"}, {}, None]))
    return obj


@st.composite
def inventory(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 10)) == 0:
        return draw(VALUES)
    named = draw(runtime())
    return {
        "cluster": draw(st.sampled_from([{API: {"ClusterTrainingRuntime": {"rt": named}}}, {API: {}}, {}, None, [1]])),
        "namespace": draw(
            st.sampled_from([{"team-a": {API: {"TrainingRuntime": {"rt": named, "x": 5}}}}, {"team-a": None}, {}, 7])
        ),
    }


LIMITS = st.fixed_dictionaries(
    {},
    optional={
        "maxTotal": st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), QUANTITY, max_size=3)
        | VALUES,
        "maxTrainerNodes": st.integers(-1, 10) | VALUES,
        "maxPods": st.integers(-1, 10) | VALUES,
    },
)
PARAMETERS = (
    st.fixed_dictionaries(
        {},
        optional={
            "maxTotal": LIMITS.map(lambda x: x.get("maxTotal", {})),
            "namespaces": st.dictionaries(st.sampled_from(["team-a", ""]), LIMITS | VALUES, max_size=2),
        },
    ).flatmap(lambda base: LIMITS.map(lambda extra: {**extra, **base}))
    | VALUES
)


@cache
def templates() -> list[CompiledTemplate]:
    return [CompiledTemplate(bundle(p.name).templates[KIND], lambda _: None) for p in generated_profiles()]  # type: ignore[arg-type]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trainjob_with_ref(), inventory(), PARAMETERS, st.sampled_from(["CREATE", "UPDATE", "", "DELETE"]))
def test_budget_template_never_errors(obj, inv, parameters, operation):
    review = {"operation": operation, "object": obj, "oldObject": None, "kind": {"kind": "TrainJob"}}
    for template in templates():
        found, _ = template.violations(review, parameters, inv)  # raises TemplateError on any evaluation error
        for violation in found:
            details = violation["details"]
            assert isinstance(violation["msg"], str)
            assert {type(details[k]) for k in ("field", "type", "detail")} == {str}
            assert violation["msg"] == f"{details['field']}: {details['type']}: {details['detail']}"
