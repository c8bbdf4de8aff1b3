"""Malformed TrainJobs, runtimes, v1 jobs, JobSets, parameters and external_data answers never make any
template of any generated profile error: a policy decides, it does not crash.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.gatekeeper.runner import CompiledTemplate
from generator.profiles import generated_profiles
from tests.rules.helpers import bundle

VOCABULARY = [
    "spec",
    "metadata",
    "status",
    "name",
    "namespace",
    "labels",
    "suspend",
    "podSpecOverrides",
    "podTemplateOverrides",
    "runtimePatches",
    "managedBy",
    "runPolicy",
    "template",
    "replicatedJobs",
    "replicas",
    "containers",
    "initContainers",
    "resources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "sizeLimit",
    "targetJobs",
    "schedulingGates",
    "nodeSelector",
    "replicatedJobsStatus",
    "active",
    "found",
    "activeReplicatedJobs",
    "trainer.kubeflow.org/trainjob-ancestor-step",
    "trainer.kubeflow.org/webhook-validation",
]
STRINGS = [
    "",
    "node",
    "launcher",
    "trainer",
    "dataset-initializer",
    "model-initializer",
    "disabled",
    "1",
    "1000m",
    "1Gi",
    "1024Mi",
    "1e3",
    "1E",
    "5n",
    "2u",
    "1e99999",
    "-.5Ki",
    "abc",
    "true",
    "kueue.x-k8s.io/multikueue",
    "trainer.kubeflow.org/trainjob-controller",
    "kubeflow.org/training-operator",
    "Inventory",
    "ExternalData",
    "team-a",
    "job",
    "x" * 5000,
]
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(STRINGS)
    | st.text(max_size=6)
)
VALUES = st.recursive(
    LEAVES,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(VOCABULARY), children, max_size=5)
    ),
    max_leaves=30,
)
HUGE_LIST = st.integers(min_value=0, max_value=1500).map(
    lambda n: [{"targetJobs": [{"name": "node"}], "replicas": 2, "name": "launcher", "active": 1}] * n
)
SPEC_VALUE = VALUES | HUGE_LIST


def _objects(api_version: str, kinds: list[str]) -> st.SearchStrategy[Any]:
    shaped = st.fixed_dictionaries(
        {"apiVersion": st.just(api_version), "kind": st.sampled_from(kinds)},
        optional={
            "metadata": st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["job", "", 5]) | VALUES,
                    "namespace": st.sampled_from(["team-a", None]) | VALUES,
                    "labels": VALUES,
                },
            )
            | VALUES,
            "spec": st.dictionaries(st.sampled_from(VOCABULARY), SPEC_VALUE, max_size=6) | VALUES,
            "status": VALUES,
        },
    )
    return shaped | VALUES


TRAINER_OBJECTS = _objects("trainer.kubeflow.org/v1alpha1", ["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"])
V1_OBJECTS = _objects("kubeflow.org/v1", ["PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"])
OBJECTS = TRAINER_OBJECTS | V1_OBJECTS
PARAMETERS = (
    st.dictionaries(
        st.sampled_from(["jobSetSource", "providerName", "allowedValues"]),
        VALUES | st.sampled_from(STRINGS),
        max_size=3,
    )
    | VALUES
)
JOBSET_STATE = st.fixed_dictionaries({"found": VALUES, "activeReplicatedJobs": VALUES})
ANSWERS = (
    st.fixed_dictionaries(
        {
            "responses": st.none()
            | st.lists(st.tuples(st.sampled_from(["team-a/job", "/", 5]), JOBSET_STATE | VALUES).map(list), max_size=3)
            | st.lists(st.tuples(st.just("team-a/job"), JOBSET_STATE).map(list), min_size=2, max_size=3)
            | VALUES,
            "errors": st.none() | st.lists(st.lists(VALUES, max_size=3), max_size=3) | VALUES,
            "status_code": st.sampled_from([0, 200, 500]) | VALUES,
            "system_error": st.sampled_from(["", "connection refused"]) | VALUES,
        }
    )
    | VALUES
)
INVENTORY = (
    st.fixed_dictionaries(
        {},
        optional={
            "namespace": st.fixed_dictionaries(
                {},
                optional={
                    "team-a": st.fixed_dictionaries(
                        {},
                        optional={
                            "jobset.x-k8s.io/v1alpha2": st.fixed_dictionaries(
                                {},
                                optional={
                                    "JobSet": st.dictionaries(st.sampled_from(["job", ""]), VALUES, max_size=2) | VALUES
                                },
                            )
                            | VALUES,
                        },
                    )
                    | VALUES
                },
            )
            | VALUES,
        },
    )
    | VALUES
)


class Answer:
    """The external_data builtin, answering whatever the example drew."""

    def __init__(self) -> None:
        self.value: Any = None

    def __call__(self, _request: Any) -> Any:
        return self.value


ANSWER = Answer()


@cache
def compiled() -> list[CompiledTemplate]:
    templates = []
    for profile in generated_profiles():
        for template in bundle(profile.name).templates.values():
            templates.append(CompiledTemplate(template, ANSWER))  # type: ignore[arg-type]
    return templates


def _review(operation: Any, obj: Any, old: Any) -> dict[str, Any]:
    review: dict[str, Any] = {
        "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"},
        "name": "job",
        "namespace": "team-a",
        "object": obj,
    }
    if operation is not None:
        review["operation"] = operation
        review["oldObject"] = old
    return review


def _check(review: Any, parameters: Any, inventory: Any) -> None:
    for template in compiled():
        violations, _ = template.violations(review, parameters, inventory)  # raises TemplateError on an engine error
        for v in violations:
            details = v["details"]
            assert {type(details[k]) for k in ("field", "type", "detail")} == {str}, v
            assert v["msg"] == f"{details['field']}: {details['type']}: {details['detail']}", v


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", None]),
    obj=OBJECTS,
    old=OBJECTS | st.none(),
    parameters=PARAMETERS,
    inventory=INVENTORY,
    answer=ANSWERS,
)
def test_malformed_objects_never_error(operation, obj, old, parameters, inventory, answer):
    ANSWER.value = answer
    _check(_review(operation, obj, old), parameters, inventory)


@SETTINGS
@given(
    suspend=st.sampled_from([True, False, None, "true", 1]),
    old_overrides=SPEC_VALUE,
    new_overrides=SPEC_VALUE,
    answer=ANSWERS,
    parameters=PARAMETERS,
    inventory=INVENTORY,
)
def test_trainjob_update_with_malformed_overrides_and_answers(
    suspend, old_overrides, new_overrides, answer, parameters, inventory
):
    def trainjob(overrides: Any) -> dict[str, Any]:
        spec = {"suspend": suspend}
        for field in ("podSpecOverrides", "runtimePatches"):
            spec[field] = overrides
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "job", "namespace": "team-a"},
            "spec": spec,
        }

    ANSWER.value = answer
    _check(_review("UPDATE", trainjob(new_overrides), trainjob(old_overrides)), parameters, inventory)


@SETTINGS
@given(review=VALUES, parameters=PARAMETERS)
def test_malformed_review_never_errors(review, parameters):
    ANSWER.value = None
    _check(review, parameters, {})
