"""The budget template never errors, whatever the TrainJob, the synced runtimes and the Constraint's limits:
malformed runtimeRefs, inventories of odd shapes, runtimes with wrong types, limits that are not quantities."""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.gatekeeper.runner import CompiledTemplate
from kubeflow_trainer_policy.profiles import generated_profiles
from tests.podsets.test_differential import QUANTITY, runtime, trainjob
from tests.rules.helpers import bundle
from tests.rules.test_fuzz_policies import VALUES

KIND = "TrainerTrainJobResourceBudget"
API = "trainer.kubeflow.org/v1alpha1"
VALID_REF = st.sampled_from(
    [{"name": "rt"}, {"name": "rt", "kind": "TrainingRuntime"}, {"name": "rt", "apiGroup": None}]
)
ODD_REF = (
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
    obj["spec"]["runtimeRef"] = draw(st.one_of(VALID_REF, VALID_REF, ODD_REF))
    metadata = [{"name": "job", "namespace": "team-a"}] * 3 + [{"name": "job"}, {}, None]
    obj["metadata"] = draw(st.sampled_from(metadata))
    return obj


@st.composite
def inventory(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 10)) == 0:
        return draw(VALUES)
    named = draw(runtime())
    return {
        "cluster": draw(
            st.sampled_from([{API: {"ClusterTrainingRuntime": {"rt": named}}}] * 3 + [{API: {}}, {}, None, [1]])
        ),
        "namespace": draw(
            st.sampled_from([{"team-a": {API: {"TrainingRuntime": {"rt": named, "x": 5}}}}, {"team-a": None}, {}, 7])
        ),
    }


LIMITS = st.fixed_dictionaries(
    {},
    optional={
        "maxTotal": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 64) | QUANTITY, max_size=3
        )
        | VALUES,
        "maxTrainerNodes": st.integers(-1, 10) | VALUES,
        "maxPods": st.integers(-1, 10) | VALUES,
    },
)
REALISTIC_PARAMETERS = st.fixed_dictionaries(
    {
        "maxTotal": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 64), max_size=3
        ),
        "maxTrainerNodes": st.integers(0, 6),
        "maxPods": st.integers(0, 6),
    },
    optional={"namespaces": st.dictionaries(st.sampled_from(["team-a", ""]), LIMITS, max_size=2)},
)
ODD_PARAMETERS = (
    st.fixed_dictionaries(
        {}, optional={"namespaces": st.dictionaries(st.sampled_from(["team-a", ""]), LIMITS | VALUES)}
    ).flatmap(lambda base: LIMITS.map(lambda extra: {**extra, **base}))
    | VALUES
)
PARAMETERS = st.one_of(REALISTIC_PARAMETERS, REALISTIC_PARAMETERS, ODD_PARAMETERS)


@cache
def templates() -> list[CompiledTemplate]:
    return [CompiledTemplate(bundle(p.name).templates[KIND], lambda _: None) for p in generated_profiles()]  # type: ignore[arg-type]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trainjob_with_ref(), inventory(), PARAMETERS, st.sampled_from(["CREATE", "UPDATE", "", "DELETE"]))
def test_budget_template_never_errors(obj, inv, parameters, operation):
    review = {"operation": operation, "object": obj, "oldObject": None, "kind": {"kind": "TrainJob"}}
    for template in templates():
        found, _ = template.violations(review, parameters, inv)  # raises TemplateError on any evaluation error
        assert not template.builtin_failures()  # no builtin failed (Gatekeeper would make it undefined silently)
        for violation in found:
            details = violation["details"]
            assert isinstance(violation["msg"], str)
            assert {type(details[k]) for k in ("field", "type", "detail")} == {str}
            assert violation["msg"] == f"{details['field']}: {details['type']}: {details['detail']}"
