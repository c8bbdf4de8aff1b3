"""Spec F: a TrainJob's total requests, trainer nodes and Pods stay within a budget (per namespace if wanted)."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.catalog import cases_of
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.profiles import Profile

_runtime_ref = cases_of("trainjob-runtime-ref")
REF, not_found, not_synced = _runtime_ref.REF, _runtime_ref.not_found, _runtime_ref.not_synced

RUNTIME_REF = "trainjob-runtime-ref"

API = "trainer.kubeflow.org/v1alpha1"
NAMESPACE = "team-a"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
GPU = "nvidia.com/gpu"

QUANTITY_MAP: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"x-kubernetes-int-or-string": True},
}
LIMITS: dict[str, Any] = {
    "maxTotal": QUANTITY_MAP,
    "maxTrainerNodes": {"type": "integer", "minimum": 0},
    "maxPods": {"type": "integer", "minimum": 0},
}


def _job(
    name: str, ancestor: str | None, containers: list[dict[str, Any]], *, parallelism: int | None = None, **pod: Any
) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"template": {"spec": {"containers": containers, **pod}}}}
    if ancestor is not None:
        template["metadata"] = {"labels": {ANCESTOR: ancestor}}
    if parallelism is not None:
        template["spec"]["parallelism"] = parallelism
    return {"name": name, "template": template}


def _container(name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources}


def torch_runtime(*, kind: str = "ClusterTrainingRuntime", name: str = "torch-distributed") -> dict[str, Any]:
    """A torch runtime with both initializers (one CPU Pod each) and a trainer job with a sidecar."""
    metadata: dict[str, Any] = {"name": name}
    if kind == "TrainingRuntime":
        metadata["namespace"] = NAMESPACE
    jobs = [
        _job("dataset-initializer", "dataset-initializer", [_container("dataset-initializer", {"cpu": "2"})]),
        _job("model-initializer", "model-initializer", [_container("model-initializer", {"cpu": "2"})]),
        _job(
            "node",
            "trainer",
            [_container("node", {"cpu": "4", "memory": "16Gi"}, {GPU: 1})],
            initContainers=[{**_container("log-agent", {"cpu": "500m"}), "restartPolicy": "Always"}],
        ),
    ]
    return {
        "apiVersion": API,
        "kind": kind,
        "metadata": metadata,
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "template": {"spec": {"replicatedJobs": jobs}},
        },
    }


def deepspeed_runtime() -> dict[str, Any]:
    """MPI with the launcher as a node (as Kubeflow's deepspeed-distributed): the launcher is the trainer job."""
    jobs = [
        _job("node", None, [_container("node")]),
        _job("launcher", "trainer", [_container("node")]),
    ]
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "deepspeed-distributed"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": 1, "runLauncherAsNode": True}},
            "template": {"spec": {"replicatedJobs": jobs}},
        },
    }


def trainjob(
    *,
    nodes: int | None = 4,
    gpus: Any = 8,
    runtime: str = "torch-distributed",
    kind: str | None = None,
    namespace: str = NAMESPACE,
    extra_requests: dict[str, Any] | None = None,
) -> dict[str, Any]:
    trainer: dict[str, Any] = {}
    if nodes is not None:
        trainer["numNodes"] = nodes
    if gpus is not None:
        trainer["resourcesPerNode"] = {"limits": {GPU: gpus}, "requests": {"cpu": "8", **(extra_requests or {})}}
    ref: dict[str, Any] = {"name": runtime}
    if kind is not None:
        ref["kind"] = kind
    return {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": namespace},
        "spec": {"runtimeRef": ref, "trainer": trainer},
    }


def custom_runtime() -> dict[str, Any]:
    """Init containers, sidecars, parallelism and a trainer job without mlPolicy.numNodes."""
    prep = _job(
        "prep",
        None,
        [{"image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        parallelism=2,
        initContainers=[_container("fetch", {"cpu": "3"})],
    )
    node = _job(
        "node",
        "trainer",
        [_container("node", {"cpu": "1.0000000000"})],
        initContainers=[
            {**_container("proxy", {"cpu": "500m"}), "restartPolicy": "Always"},
            _container("setup", {"cpu": "2"}),
        ],
    )
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "custom"},
        "spec": {"mlPolicy": {"torch": {}}, "template": {"spec": {"replicatedJobs": [prep, node]}}},
    }


def two_container_runtime() -> dict[str, Any]:
    """A trainer job of two 5Gi containers: 5Gi is about 5.4e18 nano-units, so two of them pass 2^63."""
    node = _job("node", "trainer", [_container("node", {"memory": "5Gi"}), _container("helper", {"memory": "5Gi"})])
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "two-containers"},
        "spec": {"mlPolicy": {"torch": {}}, "template": {"spec": {"replicatedJobs": [node]}}},
    }


def _labelled(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "labels": {"team": "a"}}}


def _forbidden(resource: str, total: str, limit: Any, namespace: str = "") -> Expected:
    where = f" of namespace {namespace}" if namespace else ""
    return Expected("spec", "Forbidden", f"total {resource} requests {total} exceed the limit {limit}{where}")


def _cannot(field: str, type_: str, why: str) -> Expected:
    return Expected(field, type_, f"cannot compute the TrainJob's resources: {why}")


def cases(p: Profile) -> list[Case]:
    runtimes = (torch_runtime(),)
    gpu32 = {"maxTotal": {GPU: 32}}
    odd = torch_runtime()
    odd["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "resources"
    ] = {"requests": {"cpu": "two"}}
    return [
        Case(
            "no_limits_configured",
            "The default Constraint sets no limit: nothing is checked, not even the runtime.",
            trainjob(nodes=64),
            also_in_bundle=((RUNTIME_REF, not_synced("ClusterTrainingRuntime")),),
        ),
        Case(
            "audit_no_limits_configured",
            'Audit (operation "") of a stored TrainJob with the default Constraint: no limit, no violation.',
            trainjob(nodes=64),
            operation=AUDIT,
            cluster=runtimes,
        ),
        Case(
            "within_gpu_limit",
            "4 nodes x 8 GPUs (resourcesPerNode limits stand in for requests) is exactly the limit of 32: allowed.",
            trainjob(),
            cluster=runtimes,
            parameters=gpu32,
        ),
        Case(
            "over_gpu_limit",
            "5 nodes x 8 GPUs = 40 GPUs: over the limit of 32.",
            trainjob(nodes=5),
            cluster=runtimes,
            parameters=gpu32,
            expected=(_forbidden(GPU, "40", 32),),
        ),
        Case(
            "runtime_gpus_without_resources_per_node",
            "Without resourcesPerNode the runtime's node container counts: 40 nodes x 1 GPU.",
            trainjob(nodes=40, gpus=None),
            cluster=runtimes,
            parameters=gpu32,
            expected=(_forbidden(GPU, "40", 32),),
        ),
        Case(
            "each_resource_reported",
            "CPU counts initializers and sidecars: 2 + 2 + 4 x (8 + 0.5) = 38; memory 4 x 16Gi = 64Gi.",
            trainjob(extra_requests={"memory": "16Gi"}),
            cluster=runtimes,
            parameters={"maxTotal": {"cpu": "37500m", "memory": "63Gi", GPU: "32"}},
            expected=(_forbidden("cpu", "38", "37500m"), _forbidden("memory", "68719476736", "63Gi")),
        ),
        Case(
            "memory_total_past_int64",
            "64 nodes x 2 containers x 5Gi = 640Gi against 100Gi: denied. Each 5Gi fits an int64 of nano-units, the"
            " total does not: the sum of the OPA in Gatekeeper 3.20 to 3.23 wraps there.",
            trainjob(nodes=64, gpus=None, runtime="two-containers"),
            cluster=(two_container_runtime(),),
            parameters={"maxTotal": {"memory": "100Gi"}},
            expected=(_forbidden("memory", "687194767360", "100Gi"),),
        ),
        Case(
            "quantities_compare_exactly",
            "38 CPUs against a limit written 3.8e1, 64Gi of memory against 65536Mi: equal, allowed.",
            trainjob(extra_requests={"memory": "16Gi"}),
            cluster=runtimes,
            parameters={"maxTotal": {"cpu": "3.8e1", "memory": "65536Mi"}},
        ),
        Case(
            "trainer_nodes_over_limit",
            "numNodes 8 against maxTrainerNodes 4.",
            trainjob(nodes=8),
            cluster=runtimes,
            parameters={"maxTrainerNodes": 4},
            expected=(Expected("spec.trainer.numNodes", "Forbidden", "8 trainer nodes exceed the limit 4"),),
        ),
        Case(
            "pods_count_initializers",
            "4 trainer Pods and 2 initializer Pods are 6 Pods (the gang's minMember), over maxPods 5.",
            trainjob(),
            cluster=runtimes,
            parameters={"maxPods": 5},
            expected=(Expected("spec", "Forbidden", "6 pods (the gang's minMember) exceed the limit 5"),),
        ),
        Case(
            "namespace_override_raises_limit",
            "team-a may use 64 GPUs: its own limit replaces the default.",
            trainjob(nodes=8),
            cluster=runtimes,
            parameters={**gpu32, "namespaces": {NAMESPACE: {"maxTotal": {GPU: 64}}}},
        ),
        Case(
            "namespace_override_lowers_limit",
            "team-a may use 16 GPUs and 2 trainer nodes; the message names the namespace.",
            trainjob(),
            cluster=runtimes,
            parameters={**gpu32, "namespaces": {NAMESPACE: {"maxTotal": {GPU: 16}, "maxTrainerNodes": 2}}},
            expected=(
                _forbidden(GPU, "32", 16, NAMESPACE),
                Expected(
                    "spec.trainer.numNodes", "Forbidden", f"4 trainer nodes exceed the limit 2 of namespace {NAMESPACE}"
                ),
            ),
        ),
        Case(
            "other_namespace_uses_default",
            "An override for another namespace does not apply.",
            trainjob(nodes=5),
            cluster=runtimes,
            parameters={**gpu32, "namespaces": {"team-b": {"maxTotal": {GPU: 64}}}},
            expected=(_forbidden(GPU, "40", 32),),
        ),
        Case(
            "mpi_launcher_is_a_node",
            "MPI with runLauncherAsNode: 4 nodes are the launcher and 3 node Pods, 8 GPUs each: 32 GPUs, 4 Pods.",
            trainjob(runtime="deepspeed-distributed"),
            cluster=(deepspeed_runtime(),),
            parameters={"maxTotal": {GPU: 31}, "maxTrainerNodes": 4, "maxPods": 4},
            expected=(_forbidden(GPU, "32", 31),),
        ),
        Case(
            "init_containers_and_parallelism",
            "prep: 2 Pods of max(1, init 3) CPU; node: 2 Pods of max(1 + sidecar 0.5, init 2 + sidecar 0.5): 11 CPUs.",
            trainjob(nodes=2, gpus=None, runtime="custom"),
            cluster=(custom_runtime(),),
            parameters={"maxTotal": {"cpu": 10}},
            expected=(_forbidden("cpu", "11", 10),),
        ),
        Case(
            "namespaced_runtime_not_found",
            "TrainingRuntimes are synced but none has the name in the TrainJob's namespace: Kubernetes' NotFound text.",
            trainjob(kind="TrainingRuntime", runtime="other"),
            cluster=(torch_runtime(kind="TrainingRuntime"),),
            parameters=gpu32,
            expected=(_cannot("spec.runtimeRef", "Invalid", 'TrainingRuntime.trainer.kubeflow.org "other" not found'),),
            also_in_bundle=((RUNTIME_REF, not_found("TrainingRuntime", "other")),),
        ),
        Case(
            "namespaced_runtime",
            "A TrainingRuntime is read from the TrainJob's namespace.",
            trainjob(nodes=5, kind="TrainingRuntime"),
            cluster=(torch_runtime(kind="TrainingRuntime"),),
            parameters=gpu32,
            expected=(_forbidden(GPU, "40", 32),),
        ),
        Case(
            "runtime_not_found",
            "The referenced ClusterTrainingRuntime does not exist: the budget cannot be computed (fail closed).",
            trainjob(runtime="missing"),
            cluster=runtimes,
            parameters=gpu32,
            expected=(
                _cannot(
                    "spec.runtimeRef", "Invalid", 'ClusterTrainingRuntime.trainer.kubeflow.org "missing" not found'
                ),
            ),
            also_in_bundle=((RUNTIME_REF, not_found("ClusterTrainingRuntime", "missing")),),
        ),
        Case(
            "runtime_kind_not_synced",
            "No TrainingRuntime is synced at all: said plainly instead of claiming the runtime is missing.",
            trainjob(kind="TrainingRuntime"),
            cluster=runtimes,
            parameters=gpu32,
            expected=(
                _cannot(
                    "spec.runtimeRef",
                    "Internal",
                    "TrainingRuntime objects are not synced into Gatekeeper's inventory, so the runtime cannot be read",
                ),
            ),
            also_in_bundle=((RUNTIME_REF, not_synced("TrainingRuntime")),),
        ),
        Case(
            "unsupported_runtime_kind",
            "A runtimeRef kind the Trainer does not support.",
            trainjob(kind="JobSet"),
            cluster=runtimes,
            parameters=gpu32,
            expected=(_cannot("spec.runtimeRef", "Invalid", "unsupported runtime: JobSet.trainer.kubeflow.org"),),
            also_in_bundle=(
                (RUNTIME_REF, Expected(REF, "Invalid", "unsupported runtime: JobSet.trainer.kubeflow.org")),
            ),
        ),
        Case(
            "runtime_quantity_invalid",
            "A runtime value that is not a quantity (the API server would refuse it): reported, not guessed.",
            trainjob(),
            cluster=(odd,),
            parameters=gpu32,
            expected=(
                _cannot(
                    "spec.runtimeRef",
                    "Invalid",
                    "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources."
                    "requests[cpu] of runtime torch-distributed is not a Kubernetes quantity",
                ),
            ),
        ),
        Case(
            "resources_per_node_quantity_invalid",
            "A resourcesPerNode value that is not a quantity.",
            trainjob(gpus="eight"),
            cluster=runtimes,
            parameters=gpu32,
            expected=(
                _cannot(
                    "spec.trainer.resourcesPerNode",
                    "Invalid",
                    f"spec.trainer.resourcesPerNode.limits[{GPU}] is not a Kubernetes quantity",
                ),
            ),
        ),
        Case(
            "limit_not_a_quantity",
            "A Constraint limit that is not a quantity is reported (fail closed).",
            trainjob(),
            cluster=runtimes,
            parameters={"maxTotal": {GPU: "lots"}},
            expected=(
                Expected(
                    "spec", "Internal", f"the limit lots for {GPU} in the Constraint is not a Kubernetes quantity"
                ),
            ),
        ),
        Case(
            "update_checked",
            "UPDATE is checked like CREATE (here a label added to a stored TrainJob over the budget).",
            _labelled(trainjob(nodes=5)),
            operation="UPDATE",
            old_object=trainjob(nodes=5),
            cluster=runtimes,
            parameters=gpu32,
            expected=(_forbidden(GPU, "40", 32),),
        ),
        Case(
            "audit_reports_stored_trainjobs",
            'Audit (operation "") reports a stored TrainJob over budget.',
            trainjob(nodes=5),
            operation=AUDIT,
            cluster=runtimes,
            parameters=gpu32,
            expected=(_forbidden(GPU, "40", 32),),
        ),
        Case(
            "delete_not_checked",
            "DELETE is not checked.",
            None,
            operation="DELETE",
            old_object=trainjob(nodes=5),
            cluster=runtimes,
            parameters=gpu32,
        ),
    ]
