"""Hypothesis strategies of admission requests for the differential test: TrainJobs with every override shape of
the profile, runtimes of both kinds with reserved and other jobs, JobSets in every state, managedBy values, names,
CREATE and UPDATE, suspended and not; and (Cluster)TrainingRuntime requests."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from kubeflow_trainer_policy.admission import admission_review_document, apiserver_request
from kubeflow_trainer_policy.catalog.fixtures import ANCESTOR_LABEL, jobset
from kubeflow_trainer_policy.catalog.trainjob_fixtures import (
    DEPRECATED,
    container,
    job,
    override_entry,
    runtime,
    trainjob,
)
from kubeflow_trainer_policy.profiles import PROFILES, Profile

UID = "00000000-0000-4000-8000-0000000000aa"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
JOB_NAMES = ("dataset-initializer", "model-initializer", "node", "launcher", "extra")
CONTAINERS = ("node", "sidecar", "dataset-initializer", "model-initializer", "setup", "ghost")
ANCESTORS = ("trainer", "dataset-initializer", "model-initializer", "other")
MANAGED_BY = (None, "trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue", "example.com/site")
NAMES = ("job", "j", "job-2", "a" * 63, "a" * 64, "Job", "2job", "job-", "my.job")
RESERVED_ENVS = ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_PORT", "OMPI_MCA_orte_keep_fqdn_hostnames", "FOO")
NUM_PROC = (None, "auto", "cpu", "gpu", "two", 1, 4)
NUM_PROC_INT = (None, 1, 4, 0)
STORAGE_URIS = ("hf://org/model", "s3://bucket/key", "pvc://claim/path", "not-a-uri")
ML_POLICIES = (
    {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
    {"numNodes": 2, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI", "runLauncherAsNode": True}},
    {"numNodes": 1, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI"}},
    {"numNodes": 1},
    None,
)


@dataclass(frozen=True)
class Request:
    """One generated request: the AdmissionReview and the cluster objects it is judged against."""

    review: dict[str, Any]
    objects: list[dict[str, Any]]

    @property
    def label(self) -> str:
        request = self.review["request"]
        return f"{request['operation']} {request['kind']['kind']}"


def review_of(operation: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return admission_review_document(apiserver_request(operation, obj, old, uid=UID))


@st.composite
def runtime_jobs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A runtime's replicated jobs: reserved (ancestor-labelled) and other jobs, with or without the container
    their ancestor requires, replicas absent, 1 or not 1."""
    names = draw(st.lists(st.sampled_from(JOB_NAMES), min_size=0, max_size=4, unique=True))
    jobs = []
    for name in names:
        ancestor = draw(
            st.sampled_from(
                {
                    "dataset-initializer": ("dataset-initializer", "dataset-initializer", None),
                    "model-initializer": ("model-initializer", "model-initializer", None),
                    "node": ("trainer", "trainer", None),
                }.get(name, (None, "other", "trainer"))
            )
        )
        default = ["node" if ancestor == "trainer" or name == "launcher" else name]
        containers = draw(st.one_of(st.just(default), st.just([*default, "sidecar"]), st.just(["ghost"])))
        init = draw(st.sampled_from([None, ["setup"]]))
        entry = job(
            name,
            ancestor=ancestor,
            containers=containers,
            init_containers=init,
            initializer_mounts=draw(st.booleans()) or draw(st.booleans()),
        )
        replicas = draw(st.sampled_from([None, None, 1, 2, 0]))
        if replicas is not None:
            entry["replicas"] = replicas
        jobs.append(entry)
    return jobs


@st.composite
def runtimes(draw: st.DrawFn, name: str | None = None, kind: str | None = None) -> dict[str, Any]:
    jobs = draw(runtime_jobs())
    labels: dict[str, str] = {}
    if draw(st.integers(0, 5)) == 0:
        labels.update(DEPRECATED)
    if draw(st.integers(0, 7)) == 0:
        labels["trainer.kubeflow.org/webhook-validation"] = "disabled"
    rt = runtime(
        name or draw(st.sampled_from(["torch-distributed", "mpi-distributed", "torchtune-llama3.2-1b"])),
        jobs,
        kind=kind or draw(st.sampled_from(RUNTIME_KINDS)),
        ml_policy=draw(st.sampled_from(ML_POLICIES)) or {},
        labels=labels or None,
    )
    return rt


@st.composite
def overrides(draw: st.DrawFn, p: Profile) -> list[dict[str, Any]] | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    entries = []
    for i in range(draw(st.integers(0, 2))):
        # Now and then one job twice in an entry: the list-map keys of v2.2+ refuse that before any webhook.
        twice = draw(st.integers(0, 7)) == 0
        jobs = draw(st.lists(st.sampled_from([*JOB_NAMES, "ghost"]), min_size=1, max_size=2, unique=not twice))
        containers = None
        if draw(st.booleans()):
            containers = [
                container(c, env=draw(st.sampled_from([None, [{"name": "X", "value": "1"}]])))
                for c in draw(st.lists(st.sampled_from(CONTAINERS), max_size=2, unique=True))
            ]
        init = None
        if draw(st.integers(0, 3)) == 0:
            init = [container(draw(st.sampled_from(["setup", "ghost"])))]
        pod_fields: dict[str, Any] = {}
        if draw(st.booleans()):
            pod_fields["nodeSelector"] = {"pool": draw(st.sampled_from(["a", "b"]))}
        if draw(st.integers(0, 3)) == 0:
            pod_fields["schedulingGates"] = [{"name": draw(st.sampled_from(["kueue.x-k8s.io/admission", "g"]))}]
        if draw(st.integers(0, 5)) == 0:
            pod_fields["serviceAccountName"] = draw(st.sampled_from(["sa-a", "sa-b"]))
        if draw(st.integers(0, 5)) == 0:
            pod_fields["terminationGracePeriodSeconds"] = draw(st.sampled_from([300, 600]))
        entries.append(
            override_entry(
                p,
                jobs,
                containers=containers,
                init_containers=init,
                manager=draw(st.sampled_from(["example.com/site", "kueue.x-k8s.io/kueue"])) + str(i),
                pod_fields=pod_fields,
            )
        )
    return entries


@st.composite
def trainjobs(draw: st.DrawFn, p: Profile, runtime_names: tuple[str, ...]) -> dict[str, Any]:
    trainer: dict[str, Any] | None = None
    if draw(st.integers(0, 3)) > 0:
        trainer = {}
        nodes = draw(st.sampled_from([None, 1, 2, 3]))
        if nodes is not None:
            trainer["numNodes"] = nodes
        # v2.2+ types numProcPerNode as an integer: a string there is the schema's to refuse, before any webhook.
        npn = draw(st.sampled_from(NUM_PROC if p.name in ("v2.0", "v2.1") else NUM_PROC_INT))
        if npn is not None:
            trainer["numProcPerNode"] = npn
        envs = draw(st.lists(st.sampled_from(RESERVED_ENVS), max_size=2, unique=True))
        if envs:
            trainer["env"] = [{"name": e, "value": "1"} for e in envs]
        if draw(st.integers(0, 4)) == 0:
            trainer["command"] = ["tune", "run"]
    initializer: dict[str, Any] | None = None
    if draw(st.integers(0, 3)) == 0:
        initializer = {}
        for part in draw(st.lists(st.sampled_from(["dataset", "model"]), max_size=2, unique=True)):
            initializer[part] = {"storageUri": draw(st.sampled_from(STORAGE_URIS))}
    extra: dict[str, Any] = {}
    suspend = draw(st.sampled_from([None, True, False]))
    if suspend is not None:
        extra["suspend"] = suspend
    managed_by = draw(st.sampled_from(MANAGED_BY))
    if managed_by is not None:
        extra["managedBy"] = managed_by
    kind = draw(st.sampled_from([None, "ClusterTrainingRuntime", "TrainingRuntime", "TrainingRuntime", "Other"]))
    api_group = draw(st.sampled_from([None, None, "trainer.kubeflow.org", "example.com"]))
    return trainjob(
        p,
        name=draw(st.sampled_from(NAMES)),
        runtime=draw(st.sampled_from([*runtime_names, "missing"])),
        kind=kind,
        api_group=api_group,
        trainer=trainer,
        initializer=initializer,
        overrides=draw(overrides(p)),
        extra=extra,
    )


@st.composite
def jobsets(draw: st.DrawFn, name: str) -> dict[str, Any] | None:
    """No JobSet, or the TrainJob's JobSet with replicated jobs active, finished or suspended."""
    if draw(st.integers(0, 2)) == 0:
        return None
    statuses = [
        {
            "name": job_name,
            "active": draw(st.sampled_from([0, 0, 1, 3])),
            "succeeded": draw(st.sampled_from([0, 1])),
            "suspended": draw(st.sampled_from([0, 1])),
        }
        for job_name in draw(st.lists(st.sampled_from(JOB_NAMES), max_size=3, unique=True))
    ]
    return jobset(name=name, statuses=statuses)


@st.composite
def changed(draw: st.DrawFn, p: Profile, new: dict[str, Any], runtime_names: tuple[str, ...]) -> dict[str, Any]:
    """The old object of an UPDATE: the new one with some of suspend, overrides, managedBy, runtimeRef,
    trainer, initializer changed back."""
    old = copy.deepcopy(new)
    spec = old["spec"]
    for part in draw(st.lists(st.sampled_from(["suspend", "overrides", "managedBy", "ref", "trainer"]), max_size=3)):
        if part == "suspend":
            value = draw(st.sampled_from([None, True, False]))
            spec.pop("suspend", None) if value is None else spec.__setitem__("suspend", value)
        elif part == "overrides":
            value = draw(overrides(p))
            spec.pop(p.override_field, None) if value is None else spec.__setitem__(p.override_field, value)
        elif part == "managedBy":
            value = draw(st.sampled_from(MANAGED_BY))
            spec.pop("managedBy", None) if value is None else spec.__setitem__("managedBy", value)
        elif part == "ref":
            spec["runtimeRef"] = {**spec["runtimeRef"], "name": draw(st.sampled_from([*runtime_names, "other"]))}
        elif part == "trainer":
            spec["trainer"] = {"numNodes": draw(st.sampled_from([1, 4]))}
    return old


@st.composite
def trainjob_requests(draw: st.DrawFn, p: Profile) -> Request:
    cluster = []
    # Mostly both kinds present: a kind with no object at all is one Gatekeeper cannot tell from an unsynced kind.
    kinds = RUNTIME_KINDS if draw(st.integers(0, 3)) else draw(st.lists(st.sampled_from(RUNTIME_KINDS), unique=True))
    for kind in kinds:
        cluster.append(draw(runtimes(kind=kind)))
    names = tuple(sorted({rt["metadata"]["name"] for rt in cluster})) or ("torch-distributed",)
    new = draw(trainjobs(p, names))
    js = draw(jobsets(new["metadata"]["name"]))
    if js is not None:
        cluster.append(js)
    if draw(st.booleans()):
        return Request(review_of("CREATE", new), cluster)
    old = draw(changed(p, new, names))
    return Request(review_of("UPDATE", new, old), cluster)


@st.composite
def runtime_requests(draw: st.DrawFn) -> Request:
    kind = draw(st.sampled_from(RUNTIME_KINDS))
    new = draw(runtimes(kind=kind))
    if draw(st.booleans()):
        return Request(review_of("CREATE", new), [])
    old = draw(runtimes(name=new["metadata"]["name"], kind=kind))
    return Request(review_of("UPDATE", new, old), [])


def requests(p: Profile) -> st.SearchStrategy[Request]:
    return st.one_of(trainjob_requests(p), trainjob_requests(p), trainjob_requests(p), runtime_requests())


def profile(name: str) -> Profile:
    return PROFILES[name]


__all__ = ["ANCESTOR_LABEL", "Request", "profile", "requests"]
