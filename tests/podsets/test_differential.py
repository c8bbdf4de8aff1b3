"""The Rego lib computes exactly what the Python model computes, on thousands of generated runtimes and TrainJobs.

Generated: quantities in every spelling (SI, binary, exponents, fractions beyond nano precision, signs, JSON
numbers) and non-quantities; init containers, sidecars (restartPolicy Always), overhead, limits without
requests; parallelism, mlPolicy (none, plain, torch, MPI with and without the launcher as a node), numNodes and
resourcesPerNode in valid and odd shapes. One warm engine evaluates every example.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.podsets.model import ANCESTOR_LABEL, compute
from kubeflow_trainer_policy.podsets.quantity import parse_nanos

SUFFIXES = ["", "m", "k", "M", "G", "T", "P", "E", "n", "u", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "example.com/fpga", "hugepages-2Mi", "ephemeral-storage"]
NAMES = ["node", "launcher", "dataset-initializer", "model-initializer", "worker", "sidecar", ""]
ANCESTORS = ["trainer", "dataset-initializer", "model-initializer", "other"]


@st.composite
def quantity_text(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "", "", "+", "-"]))
    whole = draw(st.sampled_from(["", "0", "1", "2", "8", "16", "007", "123456789012345678901", "9" * 400]))
    fraction = draw(st.one_of(st.none(), st.text("0123456789", max_size=14), st.sampled_from(["0" * 300 + "7"])))
    if not whole and not fraction:
        whole = "1"
    number = whole if fraction is None else f"{whole}.{fraction}"
    if draw(st.booleans()):
        # every exponent apimachinery reads: any int64 (wrapped to int32), so also 1e308 and 1e99999 (issue 29)
        exponent = draw(
            st.one_of(
                st.integers(min_value=-30, max_value=30),
                st.sampled_from([308, 309, 990, 991, 1000, 99999, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63]),
                st.integers(min_value=-(2**63), max_value=2**63 - 1),
            )
        )
        sign_char = draw(st.sampled_from(["", "+", "+000"])) if exponent >= 0 else ""
        return f"{sign}{number}{draw(st.sampled_from('eE'))}{sign_char}{exponent}"
    return f"{sign}{number}{draw(st.sampled_from(SUFFIXES))}"


QUANTITY = st.one_of(
    quantity_text(),
    quantity_text(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([0.5, 1.5, 2.0, 2.25, 1000.0, 0.001, 1e308, 1.7976931348623157e308, 5e-324]),
    st.sampled_from(["abc", "1gi", "", "1e", ".", "1e1000", None, True, [1], {"a": 1}]),
)
RESOURCE_LIST = st.one_of(
    st.dictionaries(st.sampled_from(RESOURCES), QUANTITY, max_size=4),
    st.sampled_from([None, {}, [], "x"]),
)
RESOURCE_REQUIREMENTS = st.one_of(
    st.fixed_dictionaries({}, optional={"requests": RESOURCE_LIST, "limits": RESOURCE_LIST}),
    st.sampled_from([None, "x"]),
)
REALISTIC_RESOURCES = st.builds(
    lambda gpus, cpu: {"limits": {"nvidia.com/gpu": gpus}, "requests": {"cpu": cpu}},
    st.integers(min_value=1, max_value=8),
    quantity_text(),
)
COUNT = st.one_of(st.integers(min_value=-2, max_value=12), st.sampled_from([None, 2.0, 2.5, "3", True]))


def container(*, init: bool) -> st.SearchStrategy[Any]:
    optional: dict[str, Any] = {
        "name": st.sampled_from(["node", *NAMES, 5]),
        "resources": st.one_of(REALISTIC_RESOURCES, RESOURCE_REQUIREMENTS),
    }
    if init:
        optional["restartPolicy"] = st.sampled_from(["Always", "Always", "Never", "OnFailure", None])
    return st.one_of(st.fixed_dictionaries({}, optional=optional), st.sampled_from([None, "x"]))


# Strategies are built once, not in each draw: Hypothesis computes a strategy's properties per instance, and
# building them per draw cost as much as the rest of the generation (same strategies, same examples).
CONTAINERS = st.lists(container(init=False), max_size=3)
INIT_CONTAINERS = st.lists(container(init=True), max_size=4)
ANCESTOR = st.one_of(st.none(), st.sampled_from(ANCESTORS), st.just(7))
JOB_NAME = st.one_of(st.sampled_from(["node", "launcher", *NAMES]), st.none())


@st.composite
def replicated_job(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([None, "x", {}]))
    pod: dict[str, Any] = {"containers": draw(CONTAINERS)}
    if draw(st.booleans()):
        pod["initContainers"] = draw(INIT_CONTAINERS)
    if draw(st.integers(0, 3)) == 0:
        pod["overhead"] = draw(RESOURCE_LIST)
    spec: dict[str, Any] = {"template": {"spec": pod}}
    if draw(st.booleans()):
        spec["parallelism"] = draw(COUNT)
    template: dict[str, Any] = {"spec": spec}
    ancestor = draw(ANCESTOR)
    if ancestor is not None:
        template["metadata"] = {"labels": {ANCESTOR_LABEL: ancestor}}
    job: dict[str, Any] = {"template": template}
    name = draw(JOB_NAME)
    if name is not None:
        job["name"] = name
    return job


REALISTIC_ML_POLICY = st.builds(
    lambda nodes, kind, launcher: {
        "numNodes": nodes,
        **({"torch": {"numProcPerNode": "auto"}} if kind == "torch" else {}),
        **({"mpi": {"runLauncherAsNode": launcher}} if kind == "mpi" else {}),
    },
    st.integers(min_value=1, max_value=8),
    st.sampled_from(["torch", "mpi", "mpi", "plain"]),
    st.sampled_from([True, True, False]),
)
ODD_ML_POLICY = st.one_of(
    st.none(),
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "numNodes": COUNT,
            "torch": st.sampled_from([{}, {"numProcPerNode": "auto"}, None]),
            "mpi": st.one_of(
                st.fixed_dictionaries({}, optional={"runLauncherAsNode": st.sampled_from([True, False, "true", None])}),
                st.none(),
            ),
        },
    ),
)
ML_POLICY = st.one_of(REALISTIC_ML_POLICY, REALISTIC_ML_POLICY, ODD_ML_POLICY)


REPLICATED_JOBS = st.lists(replicated_job(), max_size=4)


@st.composite
def runtime(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": draw(REPLICATED_JOBS)}}}
    ml = draw(ML_POLICY)
    if ml is not None or draw(st.booleans()):
        spec["mlPolicy"] = ml
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "spec": spec}


TRAINER = st.fixed_dictionaries(
    {},
    optional={
        "numNodes": st.one_of(st.integers(min_value=1, max_value=16), COUNT),
        "resourcesPerNode": st.one_of(
            REALISTIC_RESOURCES,
            RESOURCE_REQUIREMENTS,
            st.just({"requests": None}),
            st.just({"limits": None, "requests": None}),
        ),
    },
)


@st.composite
def trainjob(draw: st.DrawFn) -> dict[str, Any]:
    trainer = draw(TRAINER)
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": {"trainer": trainer}}


SETTINGS = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(runtime(), trainjob())
def test_rego_podsets_equal_python_model(rego_podsets, runtime, trainjob):
    expected = compute(trainjob, runtime).as_json()
    assert rego_podsets.compute(trainjob, runtime) == expected


@settings(max_examples=2000, deadline=None)
@given(st.one_of(quantity_text(), QUANTITY))
def test_rego_quantities_equal_python(rego_podsets, value):
    found = rego_podsets.engine.eval_query("x := data.lib.trainer.nanos.parse(input.q)", {"q": value}).bindings
    nanos = parse_nanos(value)
    assert found == ([] if nanos is None else [{"x": nanos}])


def test_generated_examples_exercise_the_formula():
    """The strategies reach the interesting cases (a guard against a generator that only makes trivia)."""
    seen: set[str] = set()

    @settings(max_examples=600, deadline=None, database=None)
    @given(runtime(), trainjob())
    def probe(rt, tj):
        result = compute(tj, rt)
        if result.invalid:
            seen.add("invalid")
        for ps in result.pod_sets:
            if ps.count > 1:
                seen.add("count>1")
            if any(v % 10**9 for v in ps.single_pod_requests.values()):
                seen.add("fractional")
            if ps.trainer_node:
                seen.add("trainer-node")
        jobs = (rt["spec"]["template"]["spec"]["replicatedJobs"]) or []
        for job in jobs:
            pod = (
                job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
                if isinstance(job, dict)
                else {}
            )
            if any(isinstance(c, dict) and c.get("restartPolicy") == "Always" for c in pod.get("initContainers", [])):
                seen.add("sidecar")
            if pod.get("overhead"):
                seen.add("overhead")

    probe()
    assert seen >= {"invalid", "count>1", "fractional", "trainer-node", "sidecar", "overhead"}
