"""Builders of the Kubernetes objects the cases tables use (TrainJobs, JobSets, runtimes, v1 jobs)."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.profiles import Profile

TRAINJOB_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
NAMESPACE = "team-a"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
KUEUE_GATE = "kueue.x-k8s.io/admission"


def override(
    target: str = "node",
    *,
    gates: list[str] | None = None,
    node_selector: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One override entry (v2.0 PodSpecOverride shape; rule A compares entries as opaque values)."""
    entry: dict[str, Any] = {"targetJobs": [{"name": target}]}
    if gates is not None:
        entry["schedulingGates"] = [{"name": g} for g in gates]
    if node_selector is not None:
        entry["nodeSelector"] = node_selector
    if requests is not None:
        entry["containers"] = [{"name": "node", "resources": {"requests": requests}}]
    return entry


def trainjob(
    profile: Profile,
    *,
    name: str = "job",
    suspend: Any = None,
    overrides: Any = None,
    managed_by: Any = None,
    unset: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A TrainJob; `None` leaves a field absent, `unset` names spec fields written as explicit nulls."""
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}}
    if suspend is not None:
        spec["suspend"] = suspend
    if overrides is not None:
        spec[profile.override_field] = overrides
    if managed_by is not None:
        spec["managedBy"] = managed_by
    for field in unset:
        spec[field] = None
    return {
        "apiVersion": TRAINJOB_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def jobset(name: str = "job", statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JobSet a TrainJob owns; `statuses` are replicatedJobsStatus entries (zeros filled in)."""
    entries = [
        {"name": s["name"], **{k: s.get(k, 0) for k in ("ready", "succeeded", "failed", "active", "suspended")}}
        for s in statuses or []
    ]
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicatedJobs": [{"name": s["name"], "replicas": 1} for s in statuses or []]},
        "status": {"replicatedJobsStatus": entries},
    }


CONTAINER_OF_ANCESTOR = {
    "trainer": "node",
    "dataset-initializer": "dataset-initializer",
    "model-initializer": "model-initializer",
}


def replicated_job(
    name: str,
    *,
    ancestor: str | None = None,
    replicas: Any = None,
    containers: list[str] | None = None,
    init_containers: list[str] | None = None,
) -> dict[str, Any]:
    """A runtime's replicated job; containers default to the one its ancestor requires."""
    if containers is None:
        containers = [CONTAINER_OF_ANCESTOR.get(ancestor or "", name)]
    pod_spec: dict[str, Any] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    if init_containers:
        pod_spec["initContainers"] = [{"name": c, "image": "busybox"} for c in init_containers]
    job: dict[str, Any] = {"name": name}
    if replicas is not None:
        job["replicas"] = replicas
    template: dict[str, Any] = {"spec": {"template": {"spec": pod_spec}}}
    if ancestor is not None:
        template["metadata"] = {"labels": {ANCESTOR_LABEL: ancestor}}
    job["template"] = template
    return job


def runtime_object(
    name: str, kind: str, spec: dict[str, Any], *, namespace: str = NAMESPACE, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A TrainingRuntime (in `namespace`) or ClusterTrainingRuntime with `spec`."""
    metadata: dict[str, Any] = {"name": name}
    if kind == "TrainingRuntime":
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": TRAINJOB_API, "kind": kind, "metadata": metadata, "spec": spec}


def runtime(
    jobs: list[dict[str, Any]], *, kind: str = "TrainingRuntime", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    spec = {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": jobs}}}
    return runtime_object("torch-distributed", kind, spec, labels=labels)


V1_JOB_KINDS = ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")


def v1_job(kind: str = "PyTorchJob", *, managed_by: Any = None, explicit_null: bool = False) -> dict[str, Any]:
    run_policy: dict[str, Any] = {"cleanPodPolicy": "None"}
    if managed_by is not None or explicit_null:
        run_policy["managedBy"] = managed_by
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "legacy", "namespace": NAMESPACE},
        "spec": {"runPolicy": run_policy},
    }
