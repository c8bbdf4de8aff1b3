"""Builders for the TrainJob admission-check cases: TrainJobs with runtimeRef/trainer/initializer, override
entries in each profile's shape, and the runtimes they reference (what data.inventory holds)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kubeflow_trainer_policy.catalog.fixtures import ANCESTOR_LABEL, NAMESPACE, TRAINJOB_API, runtime_object
from kubeflow_trainer_policy.catalog.model import Case
from kubeflow_trainer_policy.profiles import Profile

DEPRECATED = {"trainer.kubeflow.org/support": "deprecated"}
INITIALIZER_MOUNT_PATHS = {"dataset-initializer": "/workspace/dataset", "model-initializer": "/workspace/model"}


def container(name: str, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An override's container entry ({name, env})."""
    entry: dict[str, Any] = {"name": name}
    if env is not None:
        entry["env"] = env
    return entry


def override_entry(
    p: Profile,
    jobs: list[str],
    *,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    manager: str = "example.com/site",
    pod_fields: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One entry of the profile's override list targeting `jobs`, each with the same (init)containers and
    other pod spec fields (`pod_fields`, e.g. nodeSelector)."""
    pod: dict[str, Any] = {}
    if init_containers is not None:
        pod["initContainers"] = init_containers
    if containers is not None:
        pod["containers"] = containers
    pod.update(pod_fields or {})
    if p.override_field == "podSpecOverrides":
        return {"targetJobs": [{"name": j} for j in jobs], **pod}
    if p.override_field == "podTemplateOverrides":
        return {"targetJobs": [{"name": j} for j in jobs], "spec": pod}
    replicated = [{"name": j, "template": {"spec": {"template": {"spec": pod}}}} if pod else {"name": j} for j in jobs]
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated}}}}


def trainjob(
    p: Profile,
    *,
    name: str = "job",
    runtime: str = "torch-distributed",
    kind: str | None = None,
    api_group: str | None = None,
    trainer: dict[str, Any] | None = None,
    initializer: dict[str, Any] | None = None,
    overrides: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": runtime}
    if api_group is not None:
        ref["apiGroup"] = api_group
    if kind is not None:
        ref["kind"] = kind
    spec: dict[str, Any] = {"runtimeRef": ref}
    if trainer is not None:
        spec["trainer"] = trainer
    if initializer is not None:
        spec["initializer"] = initializer
    if overrides is not None:
        spec[p.override_field] = overrides
    spec.update(extra or {})
    return {
        "apiVersion": TRAINJOB_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def job(
    name: str,
    *,
    ancestor: str | None = None,
    containers: list[str] | None = None,
    init_containers: list[str] | None = None,
    resources: dict[str, Any] | None = None,
    initializer_mounts: bool = True,
) -> dict[str, Any]:
    """A runtime's replicated job; containers default to one named like the job (`node` for the trainer). The
    containers dataset-initializer and model-initializer mount the volume `initializer` where the shipped runtimes
    do (v2.3 requires it), unless `initializer_mounts` is false."""
    if containers is None:
        containers = ["node" if ancestor == "trainer" else name]
    pod: dict[str, Any] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    for c in pod["containers"]:
        if initializer_mounts and c["name"] in INITIALIZER_MOUNT_PATHS:
            c["volumeMounts"] = [{"name": "initializer", "mountPath": INITIALIZER_MOUNT_PATHS[c["name"]]}]
    if resources is not None:
        for c in pod["containers"]:
            if c["name"] == "node":
                c["resources"] = resources
    if init_containers:
        pod["initContainers"] = [{"name": c, "image": "busybox"} for c in init_containers]
    template: dict[str, Any] = {"spec": {"template": {"spec": pod}}}
    if ancestor is not None:
        template["metadata"] = {"labels": {ANCESTOR_LABEL: ancestor}}
    return {"name": name, "template": template}


def runtime(
    name: str = "torch-distributed",
    jobs: list[dict[str, Any]] | None = None,
    *,
    kind: str = "ClusterTrainingRuntime",
    ml_policy: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = NAMESPACE,
) -> dict[str, Any]:
    """A (Cluster)TrainingRuntime; by default a torch runtime with both initializers and a trainer job
    whose Pods have an initContainer `setup` and a `sidecar` container next to `node`."""
    if jobs is None:
        jobs = [
            job("dataset-initializer", ancestor="dataset-initializer"),
            job("model-initializer", ancestor="model-initializer"),
            job("node", ancestor="trainer", containers=["node", "sidecar"], init_containers=["setup"]),
        ]
    spec = {
        "mlPolicy": ml_policy if ml_policy is not None else {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
        "template": {"spec": {"replicatedJobs": jobs}},
    }
    return runtime_object(name, kind, spec, namespace=namespace, labels=labels)


def mpi_runtime(name: str = "mpi-distributed", jobs: list[str] = ("launcher", "node"), launcher_as_node: Any = True):  # type: ignore[assignment]
    ml = {"numNodes": 1, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI"}}
    if launcher_as_node is not None:
        ml["mpi"]["runLauncherAsNode"] = launcher_as_node
    return runtime(
        name,
        [job(j, ancestor="trainer" if j == "launcher" else None, containers=["node"]) for j in jobs],
        ml_policy=ml,
    )


def default_runtime() -> dict[str, Any]:
    """The ClusterTrainingRuntime `torch-distributed` that generator.catalog.fixtures.trainjob references, with
    every job the other rules' overrides target (node, launcher, the initializers)."""
    rt = runtime()
    rt["spec"]["template"]["spec"]["replicatedJobs"].append(job("launcher", containers=["node"]))
    return rt


def with_runtime(cases: list[Case]) -> list[Case]:
    """Cases of rules about other fields, with the runtime their TrainJobs reference in the cluster, so that the
    runtime checks (trainjob-runtime-ref, which every bundle also holds) admit them."""
    rt = default_runtime()
    result = []
    for case in cases:
        subject = case.object or case.old_object or {}
        if subject.get("kind") == "TrainJob" and not any(
            o.get("kind") == "ClusterTrainingRuntime" for o in case.cluster
        ):
            case = dataclasses.replace(case, cluster=(*case.cluster, rt))
        result.append(case)
    return result
