"""Malformed TrainJobs, runtimes, v1 jobs, JobSets, parameters and external_data answers never make any
template of any generated profile error: a policy decides, it does not crash.

Each example is judged by every template of every profile, the way `review` and Gatekeeper judge a request: a
profile's templates in one engine, the review converted into OPA values once and every template's violations asked
by one query (CombinedTemplates). An error in any template fails the query; tests/gatekeeper covers that each
template also compiles and runs alone.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
from kubeflow_trainer_policy.gatekeeper.runner import CombinedTemplates
from kubeflow_trainer_policy.profiles import generated_profiles
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
    "volumeMounts",
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
    "trainer.kubeflow.org/support",
    "runtimeRef",
    "kind",
    "apiGroup",
    "trainer",
    "initializer",
    "dataset",
    "model",
    "env",
    "numNodes",
    "numProcPerNode",
    "command",
    "args",
    "resourcesPerNode",
    "mlPolicy",
    "torch",
    "mpi",
    "runLauncherAsNode",
    "manager",
    "trainingRuntimeSpec",
    "activeDeadlineSeconds",
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
    "deprecated",
    "tune",
    "run",
    "auto",
    "PET_NNODES",
    "torch-distributed",
    "torchtune-llama3.2-1b",
    "TrainingRuntime",
    "ClusterTrainingRuntime",
    "trainer.kubeflow.org",
    "model.quantize_base=True",
    "output_dir=/x",
    "acme.io/foo",
    "nvidia.com/gpu",
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
def combined() -> list[tuple[str, CombinedTemplates]]:
    """One engine per profile holding all its templates."""
    engines = []
    for profile in generated_profiles():
        templates = bundle(profile.name).templates.values()
        engines.append((profile.name, CombinedTemplates(templates, ANSWER)))  # type: ignore[arg-type]
    return engines


def trainjob_with_overrides(spec: dict[str, Any], overrides: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The TrainJob `job` in team-a with `spec`, each of `fields` set to `overrides`."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "team-a"},
        "spec": {**spec, **dict.fromkeys(fields, overrides)},
    }


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
    for profile, engine in combined():
        kinds = list(bundle(profile).templates)
        batch = [Constraint(kind, "fuzz", {}, parameters, "deny", "fuzz") for kind in kinds]
        engine.use_inventory(inventory)
        results, _ = engine.violations(review, batch)  # raises EngineError when any template errors
        # A builtin that failed is undefined, as in Gatekeeper; a policy must not lean on that (issue 29)
        assert not engine.lenient.take_failures(), profile
        for kind, violations in zip(kinds, results, strict=True):
            for v in violations:
                assert isinstance(v, dict) and isinstance(v.get("msg"), str), (profile, kind, v)
                details = v["details"]
                assert {type(details[k]) for k in ("field", "type", "detail")} == {str}, (profile, kind, v)
                assert v["msg"] == f"{details['field']}: {details['type']}: {details['detail']}", (profile, kind, v)


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
        return trainjob_with_overrides({"suspend": suspend}, overrides, ("podSpecOverrides", "runtimePatches"))

    ANSWER.value = answer
    _check(_review("UPDATE", trainjob(new_overrides), trainjob(old_overrides)), parameters, inventory)


@SETTINGS
@given(review=VALUES, parameters=PARAMETERS)
def test_malformed_review_never_errors(review, parameters):
    ANSWER.value = None
    _check(review, parameters, {})


RUNTIME_NAMES = st.sampled_from(["torch-distributed", "torchtune-llama3.2-1b", "", "x"]) | VALUES
CONTAINERS = (
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(["node", "setup", "ghost", "model-initializer", "dataset-initializer"])
                | VALUES,
                "env": VALUES,
                # v2.3's initializer check reads the mounts' names.
                "volumeMounts": st.lists(
                    st.fixed_dictionaries({}, optional={"name": st.sampled_from(["initializer", "x"]) | VALUES}),
                    max_size=2,
                )
                | VALUES,
            },
        ),
        max_size=3,
    )
    | VALUES
)
POD = st.fixed_dictionaries(
    {}, optional={"containers": CONTAINERS, "initContainers": CONTAINERS, "serviceAccountName": VALUES}
)
REPLICATED_JOB = (
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["node", "launcher", "dataset-initializer", "model-initializer", "ghost"]) | VALUES,
            "template": st.fixed_dictionaries(
                {},
                optional={
                    "metadata": VALUES,
                    "spec": st.fixed_dictionaries(
                        {}, optional={"template": st.fixed_dictionaries({}, optional={"spec": POD}) | VALUES}
                    )
                    | VALUES,
                },
            )
            | VALUES,
        },
    )
    | VALUES
)
JOBS = st.lists(REPLICATED_JOB, max_size=4) | VALUES
RUNTIME_SPEC = (
    st.fixed_dictionaries(
        {},
        optional={
            "mlPolicy": st.fixed_dictionaries(
                {},
                optional={
                    "torch": VALUES | st.just({}),
                    "mpi": VALUES | st.just({"runLauncherAsNode": True}),
                    "numNodes": VALUES,
                },
            )
            | VALUES,
            "template": st.fixed_dictionaries(
                {}, optional={"spec": st.fixed_dictionaries({}, optional={"replicatedJobs": JOBS}) | VALUES}
            )
            | VALUES,
        },
    )
    | VALUES
)


def _runtime_object(kind: str) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {"apiVersion": st.just("trainer.kubeflow.org/v1alpha1"), "kind": st.just(kind), "spec": RUNTIME_SPEC},
        optional={
            "metadata": st.fixed_dictionaries(
                {}, optional={"labels": VALUES | st.just({"trainer.kubeflow.org/support": "deprecated"})}
            ),
        },
    )


RUNTIME_INVENTORY = (
    st.fixed_dictionaries(
        {},
        optional={
            "cluster": st.fixed_dictionaries(
                {},
                optional={
                    "trainer.kubeflow.org/v1alpha1": st.fixed_dictionaries(
                        {},
                        optional={
                            "ClusterTrainingRuntime": st.dictionaries(
                                RUNTIME_NAMES.filter(lambda n: isinstance(n, str)),
                                _runtime_object("ClusterTrainingRuntime") | VALUES,
                                max_size=2,
                            )
                            | VALUES
                        },
                    )
                    | VALUES
                },
            )
            | VALUES,
            "namespace": st.fixed_dictionaries(
                {},
                optional={
                    "team-a": st.fixed_dictionaries(
                        {},
                        optional={
                            "trainer.kubeflow.org/v1alpha1": st.fixed_dictionaries(
                                {},
                                optional={
                                    "TrainingRuntime": st.dictionaries(
                                        RUNTIME_NAMES.filter(lambda n: isinstance(n, str)),
                                        _runtime_object("TrainingRuntime") | VALUES,
                                        max_size=2,
                                    )
                                    | VALUES
                                },
                            )
                            | VALUES
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
RUNTIME_NAME_SET = ["torch-distributed", "torchtune-llama3.2-1b", "x"]


def _layout(cluster: dict[str, Any], namespaced: dict[str, Any]) -> dict[str, Any]:
    """Runtimes in Gatekeeper's data.inventory layout."""
    api = "trainer.kubeflow.org/v1alpha1"
    return {
        "cluster": {api: {"ClusterTrainingRuntime": cluster}},
        "namespace": {"team-a": {api: {"TrainingRuntime": namespaced}}},
    }


SYNCED_RUNTIMES = st.builds(
    _layout,
    st.fixed_dictionaries({n: _runtime_object("ClusterTrainingRuntime") for n in RUNTIME_NAME_SET}),
    st.fixed_dictionaries({n: _runtime_object("TrainingRuntime") for n in RUNTIME_NAME_SET}),
)
"""Every name synced under both kinds: a well-formed runtimeRef always finds a (possibly malformed) runtime."""
WELL_FORMED_REF = st.fixed_dictionaries(
    {"name": st.sampled_from(RUNTIME_NAME_SET)},
    optional={
        "kind": st.sampled_from(["TrainingRuntime", "ClusterTrainingRuntime"]),
        "apiGroup": st.just("trainer.kubeflow.org"),
    },
)
RUNTIME_REF = WELL_FORMED_REF | (
    st.fixed_dictionaries(
        {},
        optional={
            "name": RUNTIME_NAMES,
            "kind": st.sampled_from(["TrainingRuntime", "ClusterTrainingRuntime", "JobSet", "", None]) | VALUES,
            "apiGroup": st.sampled_from(["trainer.kubeflow.org", "", None, "example.com"]) | VALUES,
        },
    )
    | VALUES
)
TRAINER = (
    st.fixed_dictionaries(
        {},
        optional={
            "numNodes": VALUES,
            "numProcPerNode": st.sampled_from([1, 2, "auto", "8"]) | VALUES,
            "env": st.lists(
                st.fixed_dictionaries({"name": st.sampled_from(["PET_NNODES", "FOO"]) | VALUES}), max_size=3
            )
            | VALUES,
            "command": st.just(["tune", "run"]) | VALUES,
            "args": st.lists(
                st.sampled_from(["model.quantize_base=True", "output_dir=/x", "model.lora_attn_modules=q"]) | VALUES,
                max_size=3,
            )
            | VALUES,
            "resourcesPerNode": VALUES | st.just({"limits": {"nvidia.com/gpu": "1"}}),
        },
    )
    | VALUES
)
TARGETED = st.fixed_dictionaries(
    {},
    optional={
        "targetJobs": st.lists(st.fixed_dictionaries({}, optional={"name": VALUES | st.just("node")}), max_size=3)
        | VALUES,
        "containers": CONTAINERS,
        "initContainers": CONTAINERS,
        "spec": POD | VALUES,
    },
)
PATCH = st.fixed_dictionaries(
    {},
    optional={
        "manager": st.sampled_from(["acme.io/foo", "bad", "", "A/b c"]) | VALUES,
        "trainingRuntimeSpec": st.fixed_dictionaries(
            {},
            optional={
                "template": st.fixed_dictionaries(
                    {}, optional={"spec": st.fixed_dictionaries({}, optional={"replicatedJobs": JOBS}) | VALUES}
                )
                | VALUES
            },
        )
        | VALUES,
    },
)
OVERRIDES = st.lists(TARGETED | PATCH | VALUES, max_size=3) | VALUES


def _trainjob_spec(ref: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {"runtimeRef": ref},
        optional={
            "trainer": TRAINER,
            "initializer": st.fixed_dictionaries({}, optional={"dataset": VALUES, "model": VALUES}) | VALUES,
            "podSpecOverrides": OVERRIDES,
            "podTemplateOverrides": OVERRIDES,
            "runtimePatches": OVERRIDES,
            "activeDeadlineSeconds": VALUES,
            "suspend": st.booleans(),
        },
    )


TRAINJOBS = st.fixed_dictionaries(
    {"apiVersion": st.just("trainer.kubeflow.org/v1alpha1"), "kind": st.just("TrainJob")},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(["job", "1job", "a" * 70]) | VALUES,
                "namespace": st.sampled_from(["team-a", "team-b"]) | VALUES,
            },
        ),
        "spec": _trainjob_spec(RUNTIME_REF) | VALUES,
    },
)
TRAINJOBS_ON_SYNCED_RUNTIMES = st.fixed_dictionaries(
    {
        "apiVersion": st.just("trainer.kubeflow.org/v1alpha1"),
        "kind": st.just("TrainJob"),
        "metadata": st.just({"name": "job", "namespace": "team-a"}),
        "spec": _trainjob_spec(WELL_FORMED_REF),
    }
)


@SETTINGS
@given(
    operation=st.sampled_from(["CREATE", "UPDATE", None]),
    obj=TRAINJOBS,
    old=TRAINJOBS | st.none(),
    inventory=SYNCED_RUNTIMES | RUNTIME_INVENTORY,
)
def test_trainjobs_against_malformed_runtimes_never_error(operation, obj, old, inventory):
    """TrainJobs (missing fields, nulls, wrong types, unknown kinds) against runtimes in data.inventory."""
    ANSWER.value = None
    _check(_review(operation, obj, old), {}, inventory)


@SETTINGS
@given(
    operation=st.sampled_from(["CREATE", "UPDATE", None]), obj=TRAINJOBS_ON_SYNCED_RUNTIMES, inventory=SYNCED_RUNTIMES
)
def test_trainjobs_on_found_malformed_runtimes_never_error(operation, obj, inventory):
    """The runtime is always found (both kinds synced under every name the TrainJob may use), with malformed
    mlPolicy, jobs and containers, so every check past the lookup runs."""
    ANSWER.value = None
    _check(_review(operation, obj, obj), {}, inventory)
