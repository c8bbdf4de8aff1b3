"""Kubeflow Trainer's own webhook test tables, replayed through each profile's whole bundle.

Each param is one case of an upstream table (its id: profile, upstream file and table, case name), translated from the
testing wrappers (pkg/util/testing/wrapper.go: MakeTrainJobWrapper, MakeJobSetWrapper, MakeTrainJobTrainerWrapper, ...)
into the objects the API server would send, with the runtime(s) the webhook would have looked up in the inventory.
The expected violations are upstream's field errors (path, type, detail) as this project renders them
(`<field>: <Type>: <detail>`, what `trainer-policy review` prints), plus what other upstream mechanisms (the CRD's
CEL rules, which the plugin unit tests never run) say about the same request. Where this project deliberately
differs from upstream, the case says so and cites the rule's docs.

Upstream sources. The index exposes no git tags, so each profile's snapshot is chosen by content (API fields,
messages, module path) as in docs/upstream/trainjob-admission.md §1; "index N" is a stored file version without a
commit (read_file id=N).

  v2.0  pkg/runtime/framework/plugins/jobset/jobset_test.go TestValidate: index 6263776905 (PodSpecOverrides,
          pre-release, CREATE only: initializer and override-content cases) and the HEAD side of
          opendatahub-io/trainer@2b24c767964da23a35e76f0543782bc1e5d23799 (ODH's v2.0 branch, merge with v2.1.0 in
          progress) for the PodSpecOverrides mutability cases.
        pkg/webhooks/trainingruntime_webhook_test.go TestValidateReplicatedJobs:
          toVersus/trainer@6cef6cf478298128f6fb617d3874b2aad697cfb3 (launcher reserved by name).
        pkg/webhooks/trainjob_webhook_test.go TestValidateCreate: HEAD side of opendatahub-io/trainer@2b24c76.
        torch_test.go TestValidate: index 5674117605 (IntOrString numProcPerNode, same era as the jobset table);
          its llama3_2/7B case agrees since v2.0 admits both readings of the release's model set, see the case.
        mpi_test.go TestValidate: index 5687844669 (also replayed for v2.1).
        test/integration/webhooks/trainjob_test.go: index 6376327860 (PodSpecOverrides era).
  v2.1  jobset_test.go TestValidate and trainjob_webhook_test.go TestValidateCreate: the `v2.1.0` side of
          opendatahub-io/trainer@2b24c76 (the tag itself).
        trainingruntime_webhook_test.go TestValidateReplicatedJobs:
          szaher/trainer@b02eb5b27a4b5b08ccc5b946e1e08d8f3f31a5fe (required container, no launcher rule;
          kubeflow/trainer@6090bbe has a transitional table with both and stands for no release).
  v2.2  jobset_test.go TestValidate: the v2.2.1 tag (the Go module github.com/kubeflow/trainer/v2@v2.2.1; issue 39):
          v2.2.1 back-ported v2.3's old-or-new suspend rule, its message and the three atomic-update cases, which
          are its only admission change from v2.2.0; the other cases are those of
          kubeflow/trainer@fba75718da8c67764856e69721dfee97a955998b (v2.2.0's new-object rule), unchanged in the tag.
        torch_test.go TestTorchValidate, mpi_test.go TestValidate: kubeflow/trainer@fba7571.
        trainingruntime_webhook_test.go: szaher/trainer@b02eb5b (the same four cases as
          kubeflow/trainer@3c8b998afa6b3e0a8979e8eda216f3c6c0b2164f without its post-v2.3 DRA claim cases).
        trainjob_webhook_test.go TestValidateCreate: kubeflow/trainer@09786c618f82ab617c625545d85b502aa56a9f4f.
        test/integration/webhooks/trainjob_test.go: index 60515280550 (RuntimePatches era; newer than v2.3, see below).
  v2.3  jobset_test.go TestValidate: index 61955559222 (old-or-new suspend rule `... suspended before or after the
          update`, the atomic-update cases, and the five initializer volumeMount cases of kubeflow/trainer#3714,
          merged in July 2026 before v2.3.0-rc.1; the file itself is a little newer than the tag: its plugin takes
          a fourth argument in New). panpan0000/kubeflow-trainer@aa091a02106c0dead7b050338500e2b6dc96f4ce is a
          v2.3-era jobset.go from before #3714 (docs/upstream/checks.md says why v2.3.0 has the check).
        torch_test.go TestTorchValidate: panpan0000/kubeflow-trainer@aa091a0 (the same ten cases as v2.2's).
        mpi_test.go TestValidate: v2.2's table (@fba7571; no v2.3 copy is stored; the MPI checks did not change).
        torchtune_test.go TestGetModelFromRuntimeRef: kubeflow/trainer@1162cd765754fe1b08e0710c47d1b04623d3b454.
        trainingruntime_webhook_test.go, trainjob_webhook_test.go, test/integration/webhooks/trainjob_test.go: as v2.2.

Translation of the plugin tables (TestValidate of a framework plugin): upstream passes the runtime template
directly as `info.TemplateSpec.ObjApply`; here that template is the ClusterTrainingRuntime `test-runtime` in the
inventory and the TrainJob references it (runtimeRef with the CRD's defaults for kind and apiGroup), which is what
the webhook looks up before calling the plugin. `clientErr: NotFound` is "no JobSet in the inventory"; a
`clientErr` of any other kind is a provider failure in the external-data variant (the synced variant has no
lookup that can fail). TestValidateReplicatedJobs is replayed for both runtime kinds (both webhooks call it).
The integration tables assert only the status class (Succeed, Forbidden, Invalid): the outcome is upstream's, the
messages are this project's renderings of the upstream check that produces it.

Not replayed (no admission form, or no rule of this bundle covers it):
  - plugin cases with `info: nil` ("no action when info is nil"): the webhook always builds info.
  - post-v2.3 checks: DRA resourceClaims (runtime webhook and integration),
    the TrainingRuntime deprecation warning (first release unconfirmed); and checks no rule has yet (docs/upstream/
    checks.md gap P2): Volcano PriorityClass (the Volcano queue, Flux, v2.3 MPI and envInjection checks are catalog
    cases of trainjob-ml-policy, checks.md P1, P3, P4, P7, M3, T11). The XGBoost plugin's table is only
    stored in a post-v2.3 copy; its reserved-env check is a catalog case of trainjob-ml-policy (checks.md P5).
  - CRD OpenAPI schema checks without a rule here: command/args max length, negative
    terminationGracePeriodSeconds, mlPolicy one-of and mpiImplementation enum (test/integration/webhooks/
    trainingruntime_webhook_test.go), negative coscheduling timeout (clustertrainingruntime_webhook_test.go).
  - the ClusterTrainingRuntime deprecation unit test at kubeflow/trainer@14e3b81: it labels the runtime with
    constants.LabelDeprecated/DeprecatedTrueValue, a label of no release this project targets
    (trainer.kubeflow.org/support: deprecated is covered by runtime-deprecated's own cases).
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubeflow_trainer_policy.admission import admission_review_document, apiserver_request
from kubeflow_trainer_policy.catalog import cases_of
from kubeflow_trainer_policy.catalog.model import Expected
from kubeflow_trainer_policy.gatekeeper.external_data import ProviderAnswer, ProviderItem
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.paths import EXTERNAL_DATA_VARIANT
from kubeflow_trainer_policy.profiles import generated_profiles
from kubeflow_trainer_policy_provider.reader import Document
from tests.rules.helpers import Reviewed, review_cli_many, runner_review

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
RUNTIME = "test-runtime"
PROVIDER = cases_of("trainjob-override-mutability-external-data").PROVIDER
JOBSET_PLUGIN = "pkg/runtime/framework/plugins/jobset/jobset_test.go"


@dataclass(frozen=True)
class Err:
    """One violation: the constraint (rule id) that reports it and upstream's field error."""

    rule: str
    field: str
    type: str
    detail: str

    @property
    def msg(self) -> str:
        return Expected(self.field, self.type, self.detail).msg


@dataclass(frozen=True)
class Upstream:
    profile: str
    source: str
    """upstream file and table, e.g. `pkg/.../jobset_test.go TestValidate`"""
    name: str
    """upstream's case name"""
    new: dict[str, Any] | None
    old: dict[str, Any] | None = None
    cluster: tuple[dict[str, Any], ...] = ()
    expected: tuple[Err, ...] = ()
    """upstream's expected errors, as this project renders them"""
    also: tuple[Err, ...] = ()
    """what the same request meets elsewhere upstream (CRD CEL) and the bundle's other rules therefore report"""
    provider_error: str | None = None
    """the JobSet lookup fails with this error (external-data variant)"""
    warn_only: bool = False
    """upstream answers with admission warnings only: the violations come from `warn` Constraints (allowed)"""

    @property
    def operation(self) -> str:
        return "UPDATE" if self.old is not None else "CREATE"

    @property
    def id(self) -> str:
        file, _, table = self.source.partition(" ")
        return f"{self.profile}-{file.rsplit('/', 1)[-1]} {table}-{self.name}"


# --- objects, as the wrappers build them and the API server (CRD defaults) hands them over ----------------------


def trainjob(
    name: str = "test",
    namespace: str = "default",
    *,
    runtime: str | None = RUNTIME,
    kind: str = "ClusterTrainingRuntime",
    suspend: bool | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """MakeTrainJobWrapper(namespace, name): an empty spec. The plugin tables set no runtimeRef; the webhook needs
    one to find the template they pass as `info`, so it names `test-runtime` with the CRD's defaults."""
    body: dict[str, Any] = {}
    if runtime is not None:
        body["runtimeRef"] = {"name": runtime, "apiGroup": "trainer.kubeflow.org", "kind": kind}
    if suspend is not None:
        body["suspend"] = suspend
    body.update(spec or {})
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def rjob(name: str, containers: list[dict[str, Any]] | None = None, init: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    pod: dict[str, Any] = {"containers": containers if containers is not None else []}
    if init:
        pod["initContainers"] = [{"name": c} for c in init]
    return {"name": name, "template": {"spec": {"template": {"spec": pod}}}}


def c(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, **extra}


def cluster_runtime(jobs: list[dict[str, Any]], name: str = RUNTIME, **spec: Any) -> dict[str, Any]:
    """The ClusterTrainingRuntime whose template is a plugin table's `info.TemplateSpec.ObjApply`."""
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {**spec, "template": {"spec": {"replicatedJobs": jobs}}},
    }


def patch(manager: str, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """A RuntimePatch with `trainingRuntimeSpec.template.spec.replicatedJobs`."""
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}}}


def job_patch(name: str, pod: dict[str, Any] | None = None) -> dict[str, Any]:
    if pod is None:
        return {"name": name}
    return {"name": name, "template": {"spec": {"template": {"spec": pod}}}}


def jobset(statuses: list[tuple[str, int]], name: str = "test", namespace: str = "default") -> dict[str, Any]:
    """jobsetv1alpha2.JobSet{ObjectMeta, Status.ReplicatedJobsStatus: [{Name, Active}]} (the other counters 0)."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "status": {
            "replicatedJobsStatus": [
                {"name": n, "ready": 0, "succeeded": 0, "failed": 0, "active": a, "suspended": 0} for n, a in statuses
            ]
        },
    }


# --- jobset plugin TestValidate (every profile; the override field and its messages change) ------------------------

RUNTIME_REF = "trainjob-runtime-ref"
MUTABILITY = "trainjob-override-mutability"
IMMUTABLE = "trainjob-immutable-fields"
OVERRIDE_FIELD = {
    "v2.0": "podSpecOverrides",
    "v2.1": "podTemplateOverrides",
    "v2.2": "runtimePatches",
    "v2.3": "runtimePatches",
}
PREFIX = {
    "v2.0": "PodSpecOverrides",
    "v2.1": "PodTemplateOverrides",
    "v2.2": "RuntimePatches",
    "v2.3": "RuntimePatches",
}
SA_PATH = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"


def override(profile: str, job: str, pod: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The one-entry override list each table uses: v2.0 PodSpecOverride{TargetJobs, <pod fields>}, v2.1
    PodTemplateOverride{TargetJobs, Spec: &PodTemplateSpecOverride{...}}, v2.2+ RuntimePatch{Manager: test.io/manager,
    TrainingRuntimeSpec.Template.Spec.ReplicatedJobs: [{Name, Template.Spec.Template.Spec: &PodSpecPatch{...}}]}."""
    if profile == "v2.0":
        return [{"targetJobs": [{"name": job}], **(pod or {})}]
    if profile == "v2.1":
        return [{"targetJobs": [{"name": job}], **({"spec": pod} if pod is not None else {})}]
    return [patch("test.io/manager", [job_patch(job, pod)])]


def _jobset_sources(profile: str) -> tuple[str, str]:
    """(source of the content cases, source of the mutability cases)."""
    src = f"{JOBSET_PLUGIN} TestValidate"
    if profile == "v2.0":
        return f"{src} [index 6263776905]", f"{src} [opendatahub-io/trainer@2b24c76 HEAD side]"
    if profile == "v2.1":
        return (
            f"{src} [opendatahub-io/trainer@2b24c76 v2.1.0 side]",
            f"{src} [opendatahub-io/trainer@2b24c76 v2.1.0 side]",
        )
    return src, src


def _jobset_cases(profile: str) -> list[Upstream]:
    content_src, mutability_src = _jobset_sources(profile)
    field_name = OVERRIDE_FIELD[profile]
    prefix = PREFIX[profile]
    path = f"spec.{field_name}"
    v23 = profile == "v2.3"
    patches = field_name == "runtimePatches"
    # v2.2.1 back-ported v2.3's old-or-new suspend rule (the tag's jobset_test.go has its message and cases).
    either_suspended = profile in ("v2.2", "v2.3")
    suspend_detail = f"{prefix} can only be modified when the TrainJob is suspended" + (
        " before or after the update" if either_suspended else ""
    )
    node_only = cluster_runtime([rjob("node", [c("node")])])
    with_dataset = cluster_runtime([rjob("dataset-initializer", [c("dataset-initializer")]), rjob("node", [c("node")])])
    # v2.2+: the account of the same manager's patch of the same job changes: the CRD's CEL `self == oldSelf` on
    # serviceAccountName rejects that before any webhook runs (v2.0/v2.1 have no such rule).
    sa_immutable = (
        (Err(IMMUTABLE, f"{SA_PATH}.serviceAccountName", "Invalid", "field is immutable"),) if patches else ()
    )

    def named(name: str) -> str:
        """Upstream's case names say `runtimePatches`, `podTemplateOverrides` or `podSpecOverrides`."""
        return name.replace("runtimePatches", field_name[0].lower() + field_name[1:])

    def u(name: str, *, src: str = content_src, expected: tuple[Err, ...] = (), also: tuple[Err, ...] = (), **kw: Any):
        return Upstream(profile, src, named(name), expected=expected, also=also, **kw)

    def m(name: str, **kw: Any) -> Upstream:
        return u(name, src=mutability_src, **kw)

    def forbidden(detail: str) -> Err:
        return Err(MUTABILITY, path, "Forbidden", detail)

    def active(job: str) -> Err:
        return forbidden(f"{prefix} cannot be modified when the JobSet's ReplicatedJob {job} is still active")

    def invalid(detail: str) -> Err:
        return Err(RUNTIME_REF, path, "Invalid", detail)

    def init_ref(detail: str) -> Err:
        return Err(RUNTIME_REF, "spec.runtimeRef", "Invalid", detail)

    def with_overrides(job: str, pod: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
        return trainjob(spec={field_name: override(profile, job, pod)}, **kw)

    def sa_update(old_suspend: bool | None, new_suspend: bool | None, new_account: str = "service-account-updated"):
        return {
            "old": with_overrides("node", {"serviceAccountName": "service-account"}, suspend=old_suspend),
            "new": with_overrides("node", {"serviceAccountName": new_account}, suspend=new_suspend),
        }

    missing_job = (
        "runtimePatches contain invalid replicated job" if patches else "runtimePatches contain invalid targetJob",
        "must not have replicated job that doesn't exist in the runtime job template"
        if patches
        else "must not have targetJob that doesn't exist in the runtime job template",
    )
    # v2.0/v2.1 tables spell it "does not exists".
    no_jobset = "allow changes to runtimePatches when trainJob is suspended and jobSet does not exist" + (
        "" if patches else "s"
    )
    cases = [
        u("no initializer job", new=trainjob(), cluster=(cluster_runtime([]),)),
        u("no dataset initializer job", new=trainjob(spec={"initializer": {}}), cluster=(cluster_runtime([]),)),
        u(
            "must have dataset initializer job when trainJob is configured with input datasetConfig",
            new=trainjob(spec={"initializer": {"dataset": {}}}),
            cluster=(cluster_runtime([rjob("random", [c("random")])]),),
            expected=(
                init_ref("must have dataset-initializer job when trainJob is configured with input datasetConfig"),
            ),
        ),
        u(
            "must have container with name - dataset initializer in the dataset initializer job",
            new=trainjob(spec={"initializer": {"dataset": {}}}),
            cluster=(cluster_runtime([rjob("dataset-initializer", [])]),),
            expected=(init_ref("must have container with name - dataset-initializer in the dataset-initializer job"),),
        ),
        u(
            "no model initializer job",
            new=trainjob(spec={"initializer": {}}),
            cluster=(cluster_runtime([rjob("dataset-initializer", [c("dataset-initializer")])]),),
        ),
        u(
            "must have model initializer job when trainJob is configured with input modelConfig",
            new=trainjob(spec={"initializer": {"model": {}}}),
            cluster=(cluster_runtime([rjob("random", [c("random")])]),),
            expected=(init_ref("must have model-initializer job when trainJob is configured with input modelConfig"),),
        ),
        u(
            "must have container with name - model initializer in the model initializer job",
            new=trainjob(spec={"initializer": {"model": {}}}),
            cluster=(cluster_runtime([rjob("model-initializer", [])]),),
            expected=(init_ref("must have container with name - model-initializer in the model-initializer job"),),
        ),
        u(
            missing_job[0],
            new=with_overrides("invalid", None),
            cluster=(cluster_runtime([rjob("node", [])]),),
            expected=(invalid(missing_job[1]),),
        ),
        u(
            "runtimePatches contain invalid initContainer",
            new=with_overrides("node", {"initContainers": [c("invalid")]}),
            cluster=(cluster_runtime([rjob("node", None, init=["custom-init"])]),),
            expected=(invalid("must not have initContainer that doesn't exist in the runtime job node"),),
        ),
        u(
            "runtimePatches contain invalid container",
            new=with_overrides("node", {"containers": [c("invalid")]}),
            cluster=(node_only,),
            expected=(invalid("must not have container that doesn't exist in the runtime job node"),),
        ),
        u(
            "runtimePatches contain envs for reserved container",
            new=with_overrides("node", {"containers": [c("node", env=[{"name": "ENV_NAME", "value": "OVERRIDE"}])]}),
            cluster=(node_only,),
            expected=(invalid("must not have envs for the dataset-initializer, model-initializer, node containers"),),
        ),
        m(
            "allow runtimePatches when creating a new trainJob",
            new=with_overrides("node", {"serviceAccountName": "service-account"}),
            cluster=(node_only,),
        ),
        m(
            "allow updates to trainJob with no changes to runtimePatches",
            **sa_update(None, None, "service-account"),
            cluster=(node_only,),
        ),
        m(
            "forbid changes to runtimePatches when trainJob is not suspended",
            **sa_update(False, False),
            cluster=(node_only,),
            expected=(forbidden(suspend_detail),),
            also=sa_immutable,
        ),
        m(no_jobset, **sa_update(True, True), cluster=(node_only,), also=sa_immutable),
        m(
            "allow changes to runtimePatches when trainJob is suspended and jobSet exists but is inactive",
            **sa_update(True, True),
            cluster=(with_dataset, jobset([("dataset-initializer", 0), ("node", 0)])),
            also=sa_immutable,
        ),
        m(
            "forbid changes to runtimePatches when trainJob is suspended but jobSet has an active replicatedJob",
            **sa_update(True, True),
            cluster=(with_dataset, jobset([("dataset-initializer", 0), ("node", 2)])),
            expected=(active("node"),),
            also=sa_immutable,
        ),
        m(
            "forbid changes to runtimePatches when trainJob is suspended but has multiple active replicatedJobs",
            **sa_update(True, True),
            cluster=(with_dataset, jobset([("dataset-initializer", 1), ("node", 2)])),
            expected=(active("dataset-initializer"), active("node")),
            also=sa_immutable,
        ),
        m(
            "forbid changes to runtimePatches when trainJob is suspended but jobSet cannot be checked due to a client "
            "error",
            **sa_update(True, True),
            cluster=(node_only,),
            provider_error="client error",
            also=sa_immutable,
            expected=(
                Err(
                    "trainjob-override-mutability-external-data",
                    path,
                    "Internal",
                    # upstream: field.InternalError(<path>, err); the detail names the error and the lookup
                    # (docs/policies/trainjob-override-mutability-external-data.md).
                    "failed to get the state of JobSet default/test from external data provider "
                    "trainer-jobset-provider: client error",
                ),
            ),
        ),
    ]
    if v23:
        cases += _initializer_volume_mount_cases(profile, content_src)
    if either_suspended:
        nodesel = override(profile, "node", {"nodeSelector": {"injected": "by-kueue"}})
        cases += [
            m(
                "allow atomic update: modify runtimePatches and unsuspend trainJob in a single request",
                old=with_overrides("node", {"serviceAccountName": "service-account"}, suspend=True),
                new=trainjob(suspend=False, spec={field_name: nodesel}),
                cluster=(node_only,),
            ),
            m(
                "allow atomic update: modify runtimePatches and suspend trainJob in a single request",
                **sa_update(False, True),
                cluster=(node_only,),
                also=sa_immutable,
            ),
            m(
                "forbid atomic update: suspending trainJob with runtimePatches change is rejected when jobSet has an "
                "active replicatedJob",
                **sa_update(False, True),
                cluster=(node_only, jobset([("node", 2)])),
                expected=(active("node"),),
                also=sa_immutable,
            ),
        ]
    return cases


def _initializer_volume_mount_cases(profile: str, src: str) -> list[Upstream]:
    """kubeflow/trainer#3714 (v2.3): a configured initializer's container must mount the volume `initializer`. The
    passing cases put the volume in the JobSet's volumeClaimPolicies, as the shipped LLM runtimes do; the plugin
    reads only the container's mounts."""
    claims = {"volumeClaimPolicies": [{"templates": [{"metadata": {"name": "initializer"}}]}]}
    mounted = [{"name": "initializer"}]

    def runtime(*jobs: str, mounts: list[dict[str, Any]] | None = mounted, policies: bool = True) -> dict[str, Any]:
        rt = cluster_runtime([rjob(j, [c(j, **({"volumeMounts": mounts} if mounts else {}))]) for j in jobs])
        if policies:
            rt["spec"]["template"]["spec"].update(claims)
        return rt

    def missing(job: str) -> Err:
        return Err(
            RUNTIME_REF,
            "spec.runtimeRef",
            "Invalid",
            f"must have volumeMount with name - initializer in container {job} of the {job} job",
        )

    def u(name: str, **kw: Any) -> Upstream:
        return Upstream(profile, src, name, **kw)

    dataset, model = "dataset-initializer", "model-initializer"
    return [
        u(
            "valid dataset initializer with volumeClaimPolicies and volumeMount passes",
            new=trainjob(spec={"initializer": {"dataset": {}}}),
            cluster=(runtime(dataset),),
        ),
        u(
            "valid model initializer with volumeClaimPolicies and volumeMount passes",
            new=trainjob(spec={"initializer": {"model": {}}}),
            cluster=(runtime(model),),
        ),
        u(
            "valid dataset and model initializers together pass",
            new=trainjob(spec={"initializer": {"dataset": {}, "model": {}}}),
            cluster=(runtime(dataset, model),),
        ),
        u(
            "must have volumeMount with name - initializer in the dataset initializer container",
            new=trainjob(spec={"initializer": {"dataset": {}}}),
            cluster=(runtime(dataset, mounts=None, policies=False),),
            expected=(missing(dataset),),
        ),
        u(
            "must have volumeMount with name - initializer in the model initializer container",
            new=trainjob(spec={"initializer": {"model": {}}}),
            cluster=(runtime(model, mounts=None, policies=False),),
            expected=(missing(model),),
        ),
    ]


# --- torch and mpi plugin TestValidate (v2.2 table; replayed for v2.3 too) ------------------------------------------

TORCH_PLUGIN = "pkg/runtime/framework/plugins/torch/torch_test.go"
MPI_PLUGIN = "pkg/runtime/framework/plugins/mpi/mpi_test.go"
ML_POLICY = "trainjob-ml-policy"


def container_trainer(
    image: str, command: list[str] | None, args: list[str] | None, requests: dict[str, str] | None, **extra: Any
) -> dict[str, Any]:
    """MakeTrainJobTrainerWrapper()...Container(image, command, args, resRequests): resourcesPerNode.requests
    (an empty ResourceList is omitted by its JSON tag)."""
    body: dict[str, Any] = {**extra, "image": image}
    if command:
        body["command"] = command
    if args:
        body["args"] = args
    body["resourcesPerNode"] = {"requests": requests} if requests else {}
    return body


def torch_runtime(name: str = RUNTIME) -> dict[str, Any]:
    """info: runtime.NewInfo(WithMLPolicySource(MakeMLPolicyWrapper().WithMLPolicySource(TorchPolicy())))."""
    return cluster_runtime([], name, mlPolicy={"torch": {}})


def _torch_cases(profile: str) -> list[Upstream]:
    src = f"{TORCH_PLUGIN} TestTorchValidate"

    def u(name: str, **kw: Any) -> Upstream:
        return Upstream(profile, src, name, **kw)

    def err(field_path: str, detail: str) -> Err:
        return Err(ML_POLICY, field_path, "Invalid", detail)

    def tune(runtime: str, num_nodes: int, args: list[str] | None, requests: dict[str, str] | None) -> dict[str, Any]:
        trainer = container_trainer(
            "ghcr.io/kubeflow/trainer/torchtune-trainer", ["tune", "run"], args, requests, numNodes=num_nodes
        )
        return trainjob(runtime=runtime, spec={"trainer": trainer})

    qlora = ["model.lora_attn_modules=[q_proj, v_proj, output_proj]", "model.quantize_base=True"]
    return [
        u(
            "no action when info does not have MLPolicySource",
            old=trainjob(),
            new=trainjob(),
            cluster=(cluster_runtime([]),),
        ),
        u(
            "no action when info has MLPolicySource but no Torch policy",
            old=trainjob(),
            new=trainjob(),
            cluster=(cluster_runtime([], mlPolicy={}),),
        ),
        u(
            "no action when info does not have numProcPerNode",
            old=trainjob(spec={"trainer": {}}),
            new=trainjob(spec={"trainer": {}}),
            cluster=(torch_runtime(),),
        ),
        u(
            "valid environment variable present",
            new=trainjob(
                spec={"trainer": {"env": [{"name": "test", "value": "value"}, {"name": "test2", "value": "value"}]}}
            ),
            cluster=(torch_runtime(),),
        ),
        u(
            "reserved environment variable present",
            new=trainjob(
                spec={
                    "trainer": {
                        "env": [{"name": "test", "value": "value"}, {"name": "PET_NPROC_PER_NODE", "value": "value"}]
                    }
                }
            ),
            cluster=(torch_runtime(),),
            expected=(
                err("spec.trainer.env", "must not have reserved envs, invalid envs configured: [PET_NPROC_PER_NODE]"),
            ),
        ),
        u(
            "unsupported pretrained model",
            new=tune("torchtune-llama3.1-70b", 1, None, {}),
            cluster=(torch_runtime("torchtune-llama3.1-70b"),),
            expected=(
                err(
                    "spec.runtimeRef.name",
                    "must have a supported pretrained model, invalid model configured: llama3_1/70B",
                ),
            ),
        ),
        u(
            "multi-node mode is only enabled for Llama-3.3-70b",
            new=tune("torchtune-llama3.2-3b", 2, None, {}),
            cluster=(torch_runtime("torchtune-llama3.2-3b"),),
            expected=(err("spec.trainer.numNodes", "must be 1 for llama3_2/3B model"),),
        ),
        u(
            "qlora is not supported for qwen in torchtune",
            new=tune("torchtune-qwen2.5-1.5b", 1, qlora, {}),
            cluster=(torch_runtime("torchtune-qwen2.5-1.5b"),),
            expected=(err("spec.runtimeRef.name", "QLoRA is not supported for qwen2_5/1.5B model"),),
        ),
        u(
            "muti-devices qlora is not supported for llama3.2-1b in torchtune",
            new=tune("torchtune-llama3.2-1b", 1, qlora, {"example.com/gpu": "2"}),
            cluster=(torch_runtime("torchtune-llama3.2-1b"),),
            expected=(
                err("spec.trainer.numProcPerNode", "must be auto or 1 for llama3_2/1B model when using QLoRA"),
                err(
                    "spec.trainer.resourcesPerNode",
                    "must have gpu resource with value 1 for llama3_2/1B model when using QLoRA",
                ),
            ),
        ),
    ]


def _torch_v20_cases(profile: str = "v2.0") -> list[Upstream]:
    """torch_test.go TestValidate at index 5674117605: the v2.0-era table (IntOrString numProcPerNode, Validate
    without a context, as the v2.0 jobset table index 6263776905), checks only when numProcPerNode is set."""
    src = f"{TORCH_PLUGIN} TestValidate [index 5674117605]"

    def u(name: str, **kw: Any) -> Upstream:
        return Upstream(profile, src, name, **kw)

    def err(field_path: str, detail: str) -> Err:
        return Err(ML_POLICY, field_path, "Invalid", detail)

    def rt(name: str = RUNTIME, npp: str | None = "auto") -> dict[str, Any]:
        return cluster_runtime([], name, mlPolicy={"torch": {"numProcPerNode": npp} if npp else {}})

    def tune(runtime: str, num_nodes: int) -> dict[str, Any]:
        trainer = container_trainer(
            "ghcr.io/kubeflow/trainer/torchtune-trainer",
            ["tune", "run"],
            None,
            {},
            numProcPerNode="auto",
            numNodes=num_nodes,
        )
        return trainjob(runtime=runtime, spec={"trainer": trainer})

    env = [{"name": "test", "value": "value"}, {"name": "test2", "value": "value"}]
    reserved = [{"name": "test", "value": "value"}, {"name": "PET_NPROC_PER_NODE", "value": "value"}]
    return [
        u(
            "no action when info does not have MLPolicySource",
            old=trainjob(),
            new=trainjob(),
            cluster=(cluster_runtime([]),),
        ),
        u(
            "no action when info has MLPolicySource but no Torch policy",
            old=trainjob(),
            new=trainjob(),
            cluster=(cluster_runtime([], mlPolicy={}),),
        ),
        u(
            "no action when info does not have numProcPerNode",
            old=trainjob(spec={"trainer": {}}),
            new=trainjob(spec={"trainer": {}}),
            cluster=(rt(npp=None),),
        ),
        u(
            "numProcPerNode is string and invalid",
            new=trainjob(spec={"trainer": {"numProcPerNode": "npu"}}),
            cluster=(rt(npp="npu"),),
            expected=(err("spec.trainer.numProcPerNode", "must have an int value or [auto cpu gpu]"),),
        ),
        u(
            "numProcPerNode is valid string",
            new=trainjob(spec={"trainer": {"numProcPerNode": "auto"}}),
            cluster=(rt(),),
        ),
        u("valid environment variable present", new=trainjob(spec={"trainer": {"env": env}}), cluster=(rt(),)),
        u(
            "reserved environment variable present",
            new=trainjob(spec={"trainer": {"numProcPerNode": "auto", "env": reserved}}),
            cluster=(rt(),),
            expected=(
                err("spec.trainer.env", "must not have reserved envs, invalid envs configured: [PET_NPROC_PER_NODE]"),
            ),
        ),
        u(
            "unsupported pretrained model",
            new=tune("torchtune-llama3.1-70b", 1),
            cluster=(rt("torchtune-llama3.1-70b"),),
            expected=(
                err(
                    "spec.runtimeRef.name",
                    "must have a supported pretrained model, invalid model configured: llama3_1/70B",
                ),
            ),
        ),
        u(
            "multi-node mode is only enabled for Llama-3.3-70b",
            new=tune("torchtune-llama3.2-7b", 2),
            cluster=(rt("torchtune-llama3.2-7b"),),
            expected=(err("spec.trainer.numNodes", "must be 1 for llama3_2/7B model"),),
            # This pre-release table treats llama3_2/7B as supported (only the numNodes error), as do the pre-/v2
            # constants (toVersus/trainer@040b34e1e6b5a12232401eb5ab32a5c873254b73: {llama3_2/1B, llama3_2/7B,
            # llama3_3/70B}, the shared spec's list); later constants (index 5733136328, 51779942195) have 3B and
            # qwen2_5/1.5B instead. The v2.0.0 set is not in the index, so trainjob-ml-policy's v2.0 admits the
            # union of both readings (V2_0_MODELS) and agrees with this case; v2.1+ deny 7B (catalog case
            # `torchtune_llama3_2_7b_model`).
        ),
    ]


def mpi_runtime(run_launcher_as_node: bool | None, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """MPIPolicy(ptr.To[int32](1), OpenMPI, nil, runLauncherAsNode) and the info's PodSets as replicated jobs
    (runtime.WithPodSet(name, ancestor, 1, ..., containers [node]))."""
    mpi: dict[str, Any] = {"numProcPerNode": 1, "mpiImplementation": "OpenMPI"}
    if run_launcher_as_node is not None:
        mpi["runLauncherAsNode"] = run_launcher_as_node
    return cluster_runtime(jobs, mlPolicy={"mpi": mpi})


def pod_set(name: str, ancestor: str | None) -> dict[str, Any]:
    job = rjob(name, [c("node")])
    if ancestor is not None:
        job["template"]["metadata"] = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}}
    return job


def _mpi_cases(profile: str) -> list[Upstream]:
    """v2.2/v2.3: @fba7571; v2.0/v2.1: index 5687844669 (IntOrString numProcPerNode, with the int check)."""
    src = f"{MPI_PLUGIN} TestValidate" + (" [index 5687844669]" if profile in ("v2.0", "v2.1") else "")
    launcher_detail = (
        "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher and node"
    )

    def u(name: str, **kw: Any) -> Upstream:
        return Upstream(profile, src, name, **kw)

    def nodes(n: int) -> dict[str, Any]:
        return trainjob(spec={"trainer": {"numNodes": n}})

    no_launcher = (Err(ML_POLICY, "spec.trainer.numNodes", "Invalid", launcher_detail),)
    return [
        u(
            "no action when info does not have MLPolicySource",
            old=trainjob(),
            new=trainjob(),
            cluster=(cluster_runtime([]),),
        ),
        u(
            "info does not have MPIPolicySource",
            old=trainjob(),
            new=trainjob(),
            cluster=(cluster_runtime([], mlPolicy={}),),
        ),
        *(
            [
                u(
                    "numProcPerNode typed is string",
                    new=trainjob(spec={"trainer": {"numProcPerNode": "invalid"}}),
                    cluster=(mpi_runtime(None, []),),
                    expected=(
                        Err(
                            ML_POLICY,
                            "spec.trainer.numProcPerNode",
                            "Invalid",
                            "must have an int value for MPI TrainJob",
                        ),
                    ),
                )
            ]
            if profile in ("v2.0", "v2.1")
            else []
        ),
        u(
            "numProcPerNode typed is int",
            new=trainjob(spec={"trainer": {"numProcPerNode": 8}}),
            cluster=(mpi_runtime(None, []),),
        ),
        u(
            "runtime does not have Launcher but TrainJob has only 1 numNodes",
            new=nodes(1),
            cluster=(mpi_runtime(True, [pod_set("node", "trainer")]),),
        ),
        u(
            "runtime does not have Launcher even though MPI with runLauncherAsNode has 2 numNodes",
            new=nodes(2),
            cluster=(mpi_runtime(True, [pod_set("node", None)]),),
            expected=no_launcher,
        ),
        u(
            "runtime does not have Node even though MPI with runLauncherAsNode has 2 numNodes",
            new=nodes(2),
            cluster=(mpi_runtime(True, [pod_set("launcher", None)]),),
            expected=no_launcher,
        ),
        u(
            "runtime does not have Launcher and Node even though MPI with runLauncherAsNode has 2 numNodes",
            new=nodes(2),
            cluster=(mpi_runtime(True, []),),
            expected=no_launcher,
        ),
    ]


# --- pkg/webhooks: TestValidateReplicatedJobs (both runtime webhooks call validateReplicatedJobs) ----------------

RUNTIME_WEBHOOK = "pkg/webhooks/trainingruntime_webhook_test.go"
TRAINJOB_WEBHOOK = "pkg/webhooks/trainjob_webhook_test.go"
RESERVED = "runtime-reserved-replicas"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def jobset_wrapper_jobs(*, launcher: bool = False) -> list[dict[str, Any]]:
    """MakeJobSetWrapper(ns, name).Spec.ReplicatedJobs: dataset-initializer, model-initializer and node, each with
    its ancestor label and its container; the initializer containers mount the volume `initializer` (v2.3 checks
    that; the wrapper's volumes matter to no rule and are left out). LauncherReplica() inserts an unlabelled
    `launcher` (container node) before node. Replicas is 0 until set."""
    mounts = {
        "dataset-initializer": [{"name": "initializer", "mountPath": "/workspace/dataset"}],
        "model-initializer": [{"name": "initializer", "mountPath": "/workspace/model"}],
    }
    jobs = [
        {
            "name": name,
            "groupName": "default",
            "template": {
                "metadata": {"labels": {ANCESTOR: ancestor}},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": container,
                                    **({"volumeMounts": mounts[container]} if container in mounts else {}),
                                }
                            ]
                        }
                    }
                },
            },
        }
        for name, ancestor, container in (
            ("dataset-initializer", "dataset-initializer", "dataset-initializer"),
            ("model-initializer", "model-initializer", "model-initializer"),
            ("node", "trainer", "node"),
        )
    ]
    if launcher:
        jobs.insert(
            2,
            {
                "name": "launcher",
                "groupName": "default",
                "template": {
                    "spec": {
                        "template": {
                            "spec": {"containers": [{"name": "node", "command": ["mpirun"], "args": ["echo.sh"]}]}
                        }
                    }
                },
            },
        )
    return jobs


def replicas(jobs: list[dict[str, Any]], n: int, *names: str) -> list[dict[str, Any]]:
    """.Replicas(n, names...)"""
    for job in jobs:
        if job["name"] in names:
            job["replicas"] = n
    return jobs


def runtime_object(kind: str, jobs: list[dict[str, Any]], name: str = RUNTIME, labels: dict[str, str] | None = None):
    metadata: dict[str, Any] = {"name": name}
    if kind == "TrainingRuntime":
        metadata["namespace"] = "default"
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": TRAINER_API,
        "kind": kind,
        "metadata": metadata,
        "spec": {"template": {"spec": {"replicatedJobs": jobs}}},
    }


def _replicated_jobs_cases(profile: str) -> list[Upstream]:
    src = f"{RUNTIME_WEBHOOK} TestValidateReplicatedJobs"
    v20 = profile == "v2.0"
    path = "spec.template.spec.replicatedJobs"

    def replicas_err(i: int) -> Err:
        return Err(RESERVED, f"{path}[{i}].replicas", "Invalid", "always must be 1")

    def container_err(i: int, ancestor: str) -> Err:
        return Err(
            RESERVED,
            f"{path}[{i}].template.spec.template.spec.containers",
            "Invalid",
            f"must contain the required container for the ancestor: {ancestor}",
        )

    all_four = ("launcher", "node", "dataset-initializer", "model-initializer")
    user_specified = jobset_wrapper_jobs()
    for job in user_specified:
        job["template"]["metadata"]["labels"][ANCESTOR] = "user-specified"
    table: list[tuple[str, list[dict[str, Any]], tuple[Err, ...]]] = [
        ("valid replicatedJobs", replicas(jobset_wrapper_jobs(launcher=True), 1, *all_four), ()),
        (
            "valid replicatedJobs with unknown user-specified ancestor",
            replicas(user_specified, 2, "node", "dataset-initializer", "model-initializer"),
            (),
        ),
        (
            "invalid replicas",
            replicas(jobset_wrapper_jobs(launcher=True), 2, *all_four),
            # v2.0 reserves `launcher` by name (index 2); from v2.1 only ancestor-labelled jobs count.
            tuple(replicas_err(i) for i in ((0, 1, 2, 3) if v20 else (0, 1, 3))),
        ),
    ]
    if not v20:
        missing = replicas(jobset_wrapper_jobs(), 1, *all_four)
        for job in missing:
            job["template"]["spec"]["template"]["spec"]["containers"] = [{"name": "test", "image": "test"}]
        table.append(
            (
                "missing required container in replicatedJobs",
                missing,
                (
                    container_err(0, "dataset-initializer"),
                    container_err(1, "model-initializer"),
                    container_err(2, "trainer"),
                ),
            )
        )
    return [
        Upstream(profile, src, f"{name} ({kind})", new=runtime_object(kind, jobs), expected=expected)
        for name, jobs, expected in table
        for kind in ("TrainingRuntime", "ClusterTrainingRuntime")
    ]


# --- pkg/webhooks: TrainJob TestValidateCreate ----------------------------------------------------------------------


def _trainjob_validate_create_cases(profile: str) -> list[Upstream]:
    """v2.0: the HEAD side (ODH's v2.0 branch) of opendatahub-io/trainer@2b24c76, where `test-runtime` always exists
    and the webhook checks the name; v2.1: the v2.1.0 side of that merge; v2.2/v2.3: kubeflow/trainer@09786c6."""
    src = f"{TRAINJOB_WEBHOOK} TestValidateCreate"
    if profile == "v2.0":
        src += " [opendatahub-io/trainer@2b24c76 HEAD side]"
    elif profile == "v2.1":
        src += " [opendatahub-io/trainer@2b24c76 v2.1.0 side]"
    runtime = runtime_object("ClusterTrainingRuntime", jobset_wrapper_jobs(), "test-runtime")
    deprecated = runtime_object(
        "ClusterTrainingRuntime",
        jobset_wrapper_jobs(),
        "test-runtime",
        labels={"trainer.kubeflow.org/support": "deprecated"},
    )
    not_found = Err(
        RUNTIME_REF,
        "spec.runtimeRef",
        "Invalid",
        'ClusterTrainingRuntime.trainer.kubeflow.org "unsupported-runtime" not found: specified '
        "clusterTrainingRuntime must be created before the TrainJob is created",
    )
    not_synced = Err(
        RUNTIME_REF,
        "spec.runtimeRef",
        "Internal",
        "ClusterTrainingRuntime objects are not synced into Gatekeeper's inventory, so the runtime cannot be read",
    )
    cases = [
        Upstream(
            profile,
            src,
            "valid trainjob name compliant with RFC 1035",
            new=trainjob("valid-job-name", runtime="test-runtime"),
            cluster=(runtime,),
        ),
    ]
    if profile == "v2.0":
        return [
            *cases,
            Upstream(
                profile,
                src,
                "invalid trainjob name with uppercase letters",
                new=trainjob("Invalid-job-name", runtime="test-runtime"),
                cluster=(runtime,),
                # one Invalid at metadata.name (upstream ignores Detail; IsDNS1035Label's regex error)
                expected=(
                    Err(
                        NAME_RULE,
                        "metadata.name",
                        "Invalid",
                        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    ),
                ),
            ),
            Upstream(
                profile,
                src,
                "unsupported runtime",
                new=trainjob("valid-job-name", runtime="unsupported-runtime"),
                cluster=(runtime,),
                # upstream: field.Invalid at `spec.RuntimeRef`; this project reports it at spec.runtimeRef
                # (docs/policies/trainjob-runtime-ref.md: the typo is not copied).
                expected=(not_found,),
            ),
        ]
    return [
        *cases,
        Upstream(
            profile,
            src,
            "unsupported runtime",
            new=trainjob("valid-job-name", runtime="unsupported-runtime"),
            # No runtime exists at all. Upstream answers NotFound at `spec.RuntimeRef`; with no ClusterTrainingRuntime
            # in data.inventory this project cannot tell a missing runtime from an unsynced kind and says so
            # (docs/policies/trainjob-runtime-ref.md; the shared spec's E3: "say so instead of guessing").
            expected=(not_synced,),
        ),
        Upstream(
            profile,
            f"{src} [variant: another ClusterTrainingRuntime synced]",
            "unsupported runtime",
            new=trainjob("valid-job-name", runtime="unsupported-runtime"),
            cluster=(runtime_object("ClusterTrainingRuntime", jobset_wrapper_jobs(), "test-runtime"),),
            expected=(not_found,),
        ),
        Upstream(
            profile,
            src,
            "deprecated runtime referenced",
            new=trainjob("valid-job-name", runtime="test-runtime"),
            cluster=(deprecated,),
            # upstream: admission.Warnings (allowed); here a `warn` Constraint's violation (allowed).
            expected=(
                Err(
                    "trainjob-deprecated-runtime",
                    "spec.runtimeRef",
                    "Invalid",
                    'Referenced ClusterTrainingRuntime "test-runtime" is deprecated and will be removed in a future '
                    "release of Kubeflow Trainer. See runtime deprecation policy: "
                    "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy",
                ),
            ),
            warn_only=True,
        ),
    ]


def _integration_v20_cases(profile: str = "v2.0") -> list[Upstream]:
    """test/integration/webhooks/trainjob_test.go at index 6376327860: the v2.0-era file (PodSpecOverrides,
    IntOrString numProcPerNode). Its name table expects Invalid (422), i.e. the CRD's CEL rules already rejected bad
    names; this project's v2.0 profile reproduces the v2.0 webhook's own name check (the DNS-1035 details, see
    docs/policies/trainjob-name.md), so the outcome is the same and the message is the webhook's."""
    src = f"{INTEGRATION} [index 6376327860]"
    create_src = f"{src} Validate-TrainJob-on-creation"
    names_src = f"{src} RFC1035-compliant-TrainJob-name-validation"
    marker_src = f"{src} markers:Validate-TrainJob-on-creation"
    update_src = f"{src} markers:Validate-TrainJob-on-update"
    tr = "TrainingRuntime"
    regex = (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )

    tj = integration_trainjob
    mpi = integration_runtimes()
    mpi[0]["spec"]["mlPolicy"] = {"mpi": {}}
    torch = integration_runtimes(torch=True)
    marker = tuple(dict(r, metadata={**r["metadata"], "name": "testing"}) for r in integration_runtimes())

    def mj(name: str, **spec: Any) -> dict[str, Any]:
        return trainjob(name, runtime="testing", kind=tr, spec=spec)

    managed = mj("valid-managed-by", suspend=False, managedBy="trainer.kubeflow.org/trainjob-controller")
    runtime_ref = mj("valid-runtimeref", suspend=False, managedBy="trainer.kubeflow.org/trainjob-controller")
    return [
        *_integration_lookup_cases(profile, create_src),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob with invalid trainer config for mpi runtime",
            new=tj(trainer={"numProcPerNode": "invalid"}),
            cluster=mpi,
            expected=(
                Err(ML_POLICY, "spec.trainer.numProcPerNode", "Invalid", "must have an int value for MPI TrainJob"),
            ),
        ),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob with invalid trainer config for torch runtime",
            new=tj(trainer={"numProcPerNode": "invalid"}),
            cluster=torch,
            expected=(
                Err(ML_POLICY, "spec.trainer.numProcPerNode", "Invalid", "must have an int value or [auto cpu gpu]"),
            ),
        ),
        Upstream(
            profile,
            create_src,
            "Should succeed in creating trainJob with valid trainer config for torch runtime",
            new=tj(trainer={"numProcPerNode": "auto"}),
            cluster=torch,
        ),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob with trainer config having envs with reserved env names",
            new=tj(trainer={"numProcPerNode": "auto", "env": [{"name": "PET_NODE_RANK", "value": "1"}]}),
            cluster=torch,
            expected=(
                Err(
                    ML_POLICY,
                    "spec.trainer.env",
                    "Invalid",
                    "must not have reserved envs, invalid envs configured: [PET_NODE_RANK]",
                ),
            ),
        ),
        *_integration_name_cases(profile, names_src, regex, "must be no more than 63 characters"),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create TrainJob with 'managedBy: trainer.kubeflow.org/trainjob-controller'",
            new=mj("managed-by-trainjob-controller", managedBy="trainer.kubeflow.org/trainjob-controller"),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create TrainJob with 'managedBy: kueue.x-k8s.io/multukueue'",
            new=mj("managed-by-trainjob-controller", managedBy="kueue.x-k8s.io/multikueue"),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should fail to create TrainJob with invalid managedBy",
            new=mj("invalid-managed-by", managedBy="invalid"),
            cluster=marker,
            expected=(
                Err(
                    MANAGED_BY,
                    "spec.managedBy",
                    "Invalid",
                    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set",
                ),
            ),
        ),
        Upstream(
            profile,
            marker_src,
            "Should fail in creating trainJob with podSpecOverrides have duplicated targetJob",
            new=mj(
                "invalid-pod-spec-overrides",
                podSpecOverrides=[
                    {"targetJobs": [{"name": "node"}], "serviceAccountName": "custom-sa"},
                    {"targetJobs": [{"name": "node"}], "serviceAccountName": "custom-sa-two"},
                ],
            ),
            cluster=marker,
            expected=(Err(RUNTIME_REF, "spec.podSpecOverrides", "Duplicate", '"node"'),),
        ),
        Upstream(
            profile,
            update_src,
            "Should fail to update TrainJob managedBy",
            old=managed,
            new={**managed, "spec": {**managed["spec"], "managedBy": "kueue.x-k8s.io/multikueue"}},
            cluster=marker,
            expected=(Err(MANAGED_BY, "spec.managedBy", "Invalid", "ManagedBy value is immutable"),),
        ),
        Upstream(
            profile,
            update_src,
            "Should fail to update runtimeRef",
            old=runtime_ref,
            new={
                **runtime_ref,
                "spec": {
                    **runtime_ref["spec"],
                    "runtimeRef": {**runtime_ref["spec"]["runtimeRef"], "name": "forbidden-update"},
                },
            },
            cluster=marker,
            expected=(
                Err(IMMUTABLE, "spec.runtimeRef", "Invalid", "runtimeRef is immutable"),
                Err(
                    RUNTIME_REF,
                    "spec.runtimeRef",
                    "Invalid",
                    'TrainingRuntime.trainer.kubeflow.org "forbidden-update" not found: specified trainingRuntime must '
                    "be created before the TrainJob is created",
                ),
            ),
        ),
    ]


# --- torchtune_test.go TestGetModelFromRuntimeRef (v2.3 era): the model the torchtune checks derive -------------

TORCHTUNE = "pkg/runtime/framework/plugins/torch/torchtune_test.go"


def _torchtune_model_cases(profile: str) -> list[Upstream]:
    """Each runtimeRef name of the helper's table, seen through the webhook: a `tune run` TrainJob referencing a torch
    ClusterTrainingRuntime of that name. A normalized model that upstream supports is admitted; "" (fewer or more than
    three `-` parts) is reported as an unsupported model. ("empty name returns empty" has no admission form: the CRD
    requires runtimeRef.name.)"""
    src = f"{TORCHTUNE} TestGetModelFromRuntimeRef"

    def tune(runtime: str) -> dict[str, Any]:
        return trainjob(runtime=runtime, spec={"trainer": {"command": ["tune", "run"]}})

    def unsupported(model: str) -> tuple[Err, ...]:
        return (
            Err(
                ML_POLICY,
                "spec.runtimeRef.name",
                "Invalid",
                f"must have a supported pretrained model, invalid model configured: {model}",
            ),
        )

    table = [
        ("llama3.2 1B is normalized", "torchtune-llama3.2-1b", ()),
        ("qwen2.5 1.5B is normalized", "torchtune-qwen2.5-1.5b", ()),
        ("fewer than three parts returns empty", "torchtune-llama3.2", unsupported("")),
        ("more than three parts returns empty", "torchtune-llama3.2-1b-extra", unsupported("")),
    ]
    return [
        Upstream(profile, src, name, new=tune(runtime), cluster=(torch_runtime(runtime),), expected=expected)
        for name, runtime, expected in table
    ]


# --- test/integration/webhooks/trainjob_test.go (envtest: only the status class is asserted upstream) ------------

INTEGRATION = "test/integration/webhooks/trainjob_test.go"
NAME_RULE = "trainjob-name"
MANAGED_BY = "trainjob-managed-by"


def integration_runtimes(*, model_container: bool = True, dataset_container: bool = True, torch: bool = False):
    """BeforeEach: MakeTrainingRuntimeWrapper(ns, "training-runtime") and MakeClusterTrainingRuntimeWrapper(
    "training-runtime") with the default spec (dataset-initializer, model-initializer, node; replicas 1). Some entries
    first drop a container from the TrainingRuntime or give it `mlPolicy: {torch: {}}`."""
    jobs = replicas(jobset_wrapper_jobs(), 1, "dataset-initializer", "model-initializer", "node")
    for job, keep in ((jobs[0], dataset_container), (jobs[1], model_container)):
        if not keep:
            job["template"]["spec"]["template"]["spec"]["containers"] = []
    namespaced = runtime_object("TrainingRuntime", jobs, "training-runtime")
    if torch:
        namespaced["spec"]["mlPolicy"] = {"torch": {}}
    cluster = runtime_object(
        "ClusterTrainingRuntime",
        replicas(jobset_wrapper_jobs(), 1, "dataset-initializer", "model-initializer", "node"),
        "training-runtime",
    )
    return (namespaced, cluster)


def integration_trainjob(
    name: str = "train-job", kind: str = "TrainingRuntime", runtime: str = "training-runtime", **spec: Any
) -> dict[str, Any]:
    """The creation table's TrainJob: `train-job` referencing the `training-runtime` of BeforeEach."""
    return trainjob(name, runtime=runtime, kind=kind, spec=spec)


def _integration_lookup_cases(profile: str, create_src: str) -> list[Upstream]:
    """The creation table's runtime lookup and initializer cases: the same in the v2.0-era and the v2.2-era file."""
    tj, ctr, testing = integration_trainjob, "ClusterTrainingRuntime", integration_runtimes()
    return [
        Upstream(
            profile,
            create_src,
            "Should succeed in creating trainJob with namespace scoped trainingRuntime",
            new=tj(),
            cluster=testing,
        ),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob referencing trainingRuntime not present in the namespace",
            new=tj(runtime="invalid"),
            cluster=testing,
            expected=(
                Err(
                    RUNTIME_REF,
                    "spec.runtimeRef",
                    "Invalid",
                    'TrainingRuntime.trainer.kubeflow.org "invalid" not found: specified trainingRuntime must be '
                    "created before the TrainJob is created",
                ),
            ),
        ),
        Upstream(
            profile,
            create_src,
            "Should succeed in creating trainJob with namespace scoped trainingRuntime (ClusterTrainingRuntime)",
            new=tj(kind=ctr),
            cluster=testing,
        ),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob with pre-trained model config when referencing a trainingRuntime without "
            "an initializer",
            new=tj(initializer={"model": {"storageUri": "hf://trainjob-model"}}),
            cluster=integration_runtimes(model_container=False),
            expected=(
                Err(
                    RUNTIME_REF,
                    "spec.runtimeRef",
                    "Invalid",
                    "must have container with name - model-initializer in the model-initializer job",
                ),
            ),
        ),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob with dataset initializer when referencing a trainingRuntime without an "
            "initializer",
            new=tj(initializer={"dataset": {"storageUri": "hf://trainjob-model"}}),
            cluster=integration_runtimes(dataset_container=False),
            expected=(
                Err(
                    RUNTIME_REF,
                    "spec.runtimeRef",
                    "Invalid",
                    "must have container with name - dataset-initializer in the dataset-initializer job",
                ),
            ),
        ),
        Upstream(
            profile,
            create_src,
            "Should succeed in creating trainJob with dataset initializer when referencing a ClusterTrainingRuntime "
            "with an initializer",
            new=tj(kind=ctr, initializer={"dataset": {"storageUri": "hf://trainjob-model"}}),
            cluster=testing,
        ),
    ]


def _integration_name_cases(profile: str, names_src: str, invalid: str, too_long: str) -> list[Upstream]:
    """The RFC 1035 name table, the same in the v2.0-era and the v2.2-era file; only the messages differ (the
    webhook's DNS-1035 errors in v2.0, the CRD's CEL rules from v2.1)."""
    tj, ctr, testing = integration_trainjob, "ClusterTrainingRuntime", integration_runtimes()

    def name_errs(detail: str) -> tuple[Err, ...]:
        return (Err(NAME_RULE, "metadata.name", "Invalid", detail),)

    return [
        Upstream(
            profile,
            names_src,
            "Should succeed to create TrainJob with valid RFC1035-compliant name",
            new=tj("valid-job-name", kind=ctr),
            cluster=testing,
        ),
        Upstream(
            profile,
            names_src,
            "Should succeed to create TrainJob with name exactly 63 characters",
            new=tj("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", kind=ctr),
            cluster=testing,
        ),
        Upstream(
            profile,
            names_src,
            "Should fail to create TrainJob with uppercase letters in name",
            new=tj("Invalid-job-name", kind=ctr),
            cluster=testing,
            expected=name_errs(invalid),
        ),
        Upstream(
            profile,
            names_src,
            "Should fail to create TrainJob starting with a digit",
            new=tj("1jobname", kind=ctr),
            cluster=testing,
            expected=name_errs(invalid),
        ),
        Upstream(
            profile,
            names_src,
            "Should fail to create TrainJob ending with a hyphen",
            new=tj("jobname-", kind=ctr),
            cluster=testing,
            expected=name_errs(invalid),
        ),
        Upstream(
            profile,
            names_src,
            "Should fail to create TrainJob with name exceeding 63 characters",
            new=tj("this-name-is-way-too-long-for-a-rfc1035-label-and-should-fail-validation", kind=ctr),
            cluster=testing,
            expected=name_errs(too_long),
        ),
    ]


def _integration_cases(profile: str) -> list[Upstream]:
    create_src = f"{INTEGRATION} Validate-TrainJob-on-creation"
    names_src = f"{INTEGRATION} RFC1035-compliant-TrainJob-name-validation"
    marker_src = f"{INTEGRATION} markers:Validate-TrainJob-on-creation"
    update_src = f"{INTEGRATION} markers:Validate-TrainJob-on-update"
    tr = "TrainingRuntime"
    tj = integration_trainjob
    rfc1035 = "metadata.name must match RFC 1035 DNS label format"
    too_long = "metadata.name must be no more than 63 characters"
    cases = [
        *_integration_lookup_cases(profile, create_src),
        Upstream(
            profile,
            create_src,
            "Should succeed in creating trainJob with valid trainer config for torch runtime",
            new=tj(trainer={"numProcPerNode": 4}),
            cluster=integration_runtimes(torch=True),
        ),
        Upstream(
            profile,
            create_src,
            "Should fail in creating trainJob with trainer config having envs with reserved env names",
            new=tj(trainer={"env": [{"name": "PET_NODE_RANK", "value": "1"}]}),
            cluster=integration_runtimes(torch=True),
            expected=(
                Err(
                    ML_POLICY,
                    "spec.trainer.env",
                    "Invalid",
                    "must not have reserved envs, invalid envs configured: [PET_NODE_RANK]",
                ),
            ),
        ),
        *_integration_name_cases(profile, names_src, rfc1035, too_long),
    ]
    # "TrainJob marker validations and defaulting": runtimes named "testing".
    marker = tuple(dict(r, metadata={**r["metadata"], "name": "testing"}) for r in integration_runtimes())

    def mj(name: str, **spec: Any) -> dict[str, Any]:
        return trainjob(name, runtime="testing", kind=tr, spec=spec)

    def sa_patch(manager: str, account: str) -> dict[str, Any]:
        return patch(manager, [job_patch("node", {"serviceAccountName": account})])

    def tgps(seconds: int) -> list[dict[str, Any]]:
        return [patch("acme.io/manager", [job_patch("node", {"terminationGracePeriodSeconds": seconds})])]

    managed_by_detail = "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
    cases += [
        Upstream(
            profile,
            marker_src,
            "Should succeed to create TrainJob with 'managedBy: trainer.kubeflow.org/trainjob-controller'",
            new=mj("managed-by-trainjob-controller", managedBy="trainer.kubeflow.org/trainjob-controller"),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create TrainJob with 'managedBy: kueue.x-k8s.io/multukueue'",
            new=mj("managed-by-trainjob-controller", managedBy="kueue.x-k8s.io/multikueue"),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should fail to create TrainJob with invalid managedBy",
            new=mj("invalid-managed-by", managedBy="invalid"),
            cluster=marker,
            expected=(Err(MANAGED_BY, "spec.managedBy", "Invalid", managed_by_detail),),
        ),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create trainJob with runtimePatches containing two replicated job patches",
            new=mj(
                "two-rjob-patches",
                runtimePatches=[
                    sa_patch("acme.io/manager-one", "custom-sa"),
                    sa_patch("acme.io/manager-two", "custom-sa-two"),
                ],
            ),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create trainJob with valid RuntimePatches manager",
            new=mj("valid-runtimepatches-manager", runtimePatches=[{"manager": "kueue.k8s.io/manager"}]),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should fail to create trainJob with invalid RuntimePatches manager",
            new=mj("invalid-runtimepatches-manager", runtimePatches=[{"manager": "kueue.k8s.io/"}]),
            cluster=marker,
            # upstream: validation.IsDomainPrefixedPath(runtimePatchesPath.Child("manager"), ...) in the jobset plugin
            expected=(
                Err(
                    RUNTIME_REF,
                    "spec.runtimePatches.manager",
                    "Invalid",
                    'must be a domain-prefixed path (such as "acme.io/foo")',
                ),
            ),
        ),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create TrainJob with valid terminationGracePeriodSeconds in RuntimePatches",
            new=mj("valid-termination-grace-period", runtimePatches=tgps(300)),
            cluster=marker,
        ),
        Upstream(
            profile,
            marker_src,
            "Should succeed to create TrainJob with zero terminationGracePeriodSeconds",
            new=mj("zero-termination-grace-period", runtimePatches=tgps(0)),
            cluster=marker,
        ),
    ]
    # Updates: the API server hands over the stored object, i.e. with the CRD defaults (suspend false, managedBy).
    defaults = {"suspend": False, "managedBy": "trainer.kubeflow.org/trainjob-controller"}

    def stored(name: str, **spec: Any) -> dict[str, Any]:
        return mj(name, **{**defaults, **spec})

    def updated(obj: dict[str, Any], **spec: Any) -> dict[str, Any]:
        return {**obj, "spec": {**obj["spec"], **spec}}

    immutable = "field is immutable"
    runtime_ref_old = stored("valid-runtimeref")
    model_old = stored("valid-initializer", initializer={"model": {"storageUri": "s3://test/path"}})
    trainer_old = stored("valid-trainer", trainer={"image": "test-image"})
    nodesel_old = stored(
        "valid-runtimepatches",
        suspend=True,
        runtimePatches=[patch("test.io/manager", [job_patch("node", {"nodeSelector": {"test": "test"}})])],
    )
    tgps_old = stored("immutable-termination-grace-period", runtimePatches=tgps(300))
    managed_old = stored("valid-managed-by")
    cases += [
        Upstream(
            profile,
            update_src,
            "Should fail to update managedBy",
            old=managed_old,
            new=updated(managed_old, managedBy="kueue.x-k8s.io/multikueue"),
            cluster=marker,
            expected=(Err(MANAGED_BY, "spec.managedBy", "Invalid", immutable),),
        ),
        Upstream(
            profile,
            update_src,
            "Should fail to update runtimeRef",
            old=runtime_ref_old,
            new=updated(
                runtime_ref_old, runtimeRef={**runtime_ref_old["spec"]["runtimeRef"], "name": "forbidden-update"}
            ),
            cluster=marker,
            # The new runtime does not exist either: the webhook (after the CEL rule) would say so too.
            expected=(
                Err(IMMUTABLE, "spec.runtimeRef", "Invalid", immutable),
                Err(
                    RUNTIME_REF,
                    "spec.runtimeRef",
                    "Invalid",
                    'TrainingRuntime.trainer.kubeflow.org "forbidden-update" not found: specified trainingRuntime must '
                    "be created before the TrainJob is created",
                ),
            ),
        ),
        Upstream(
            profile,
            update_src,
            "Should fail to update initializer",
            old=model_old,
            new=updated(model_old, initializer={"model": {"storageUri": "s3://forbidden-update"}}),
            cluster=marker,
            # upstream's file (newer than v2.3) expects a webhook denial (Forbidden); in v2.2/v2.3 the CRD's CEL
            # rule `self == oldSelf` on spec.initializer denies it (Invalid), which is what this project reproduces.
            expected=(Err(IMMUTABLE, "spec.initializer", "Invalid", immutable),),
        ),
        Upstream(
            profile,
            update_src,
            "Should fail to update trainer",
            old=trainer_old,
            new=updated(trainer_old, trainer={"image": "forbidden-update"}),
            cluster=marker,
            expected=(Err(IMMUTABLE, "spec.trainer", "Invalid", immutable),),
        ),
        Upstream(
            profile,
            update_src,
            "Should succeed to update runtimePatches when suspend is true",
            old=nodesel_old,
            new=updated(
                nodesel_old,
                runtimePatches=[patch("test.io/manager", [job_patch("node", {"nodeSelector": {"allow": "update"}})])],
            ),
            cluster=marker,
        ),
        Upstream(
            profile,
            update_src,
            "Should fail to update TrainJob terminationGracePeriodSeconds after creation",
            old=tgps_old,
            new=updated(tgps_old, runtimePatches=tgps(600)),
            cluster=marker,
            # v2.3's CRD makes the patch's terminationGracePeriodSeconds immutable (the Invalid upstream's marker
            # test expects); the unsuspended change is also one the JobSet plugin forbids.
            expected=(
                Err(
                    MUTABILITY,
                    "spec.runtimePatches",
                    "Forbidden",
                    "RuntimePatches can only be modified when the TrainJob is suspended before or after the update",
                ),
                *(
                    (Err(IMMUTABLE, f"{SA_PATH}.terminationGracePeriodSeconds", "Invalid", immutable),)
                    if profile == "v2.3"
                    else ()
                ),
            ),
        ),
    ]
    return cases


CASES: list[Upstream] = [
    *(case for p in ("v2.0", "v2.1", "v2.2", "v2.3") for case in _replicated_jobs_cases(p)),
    *(case for p in ("v2.0", "v2.1", "v2.2", "v2.3") for case in _trainjob_validate_create_cases(p)),
    *(case for p in ("v2.0", "v2.1", "v2.2", "v2.3") for case in _jobset_cases(p)),
    *_torch_v20_cases(),
    *(case for p in ("v2.2", "v2.3") for case in _torch_cases(p)),
    *(case for p in ("v2.0", "v2.1", "v2.2", "v2.3") for case in _mpi_cases(p)),
    *_integration_v20_cases(),
    *(case for p in ("v2.2", "v2.3") for case in _integration_cases(p)),
    *_torchtune_model_cases("v2.3"),
]


# --- running them -------------------------------------------------------------------------------------------------


class FailingProvider:
    """A provider that answers every key with an error, as the client interceptor of upstream's table does."""

    def __init__(self, error: str):
        self.error = error

    def fetch(self, keys: list[str]) -> ProviderAnswer:
        return ProviderAnswer(200, tuple(ProviderItem(k, None, self.error) for k in keys))


def _review_document(case: Upstream) -> dict[str, Any]:
    return admission_review_document(apiserver_request(case.operation, case.new, case.old))


def _batch_key(case: Upstream) -> tuple[str, str]:
    return case.profile, json.dumps(case.cluster, sort_keys=True)


BATCHES: dict[tuple[str, str], list[Upstream]] = {}
for _case in CASES:
    if _case.provider_error is None:
        BATCHES.setdefault(_batch_key(_case), []).append(_case)


def _file_name(case: Upstream) -> str:
    return f"{CASES.index(case):04d}"


@functools.cache
def _reviewed(key: tuple[str, str]) -> tuple[int, dict[str, Reviewed]]:
    """The cases that share a profile and cluster objects in one `trainer-policy review` of a folder."""
    cases = BATCHES[key]
    folder = Path(tempfile.mkdtemp(prefix="upstream-reviews-"))
    try:
        reviews = {_file_name(c): _review_document(c) for c in cases}
        return review_cli_many(folder, reviews, objects=list(cases[0].cluster), profile=cases[0].profile)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reported(tmp_path, case: Upstream) -> tuple[bool, list[tuple[str, str]]]:
    """(allowed, sorted (constraint, msg)) of the profile's bundle for the case."""
    if case.provider_error is None:
        code, results = _reviewed(_batch_key(case))
        assert code in (0, 1)
        result = results[_file_name(case)]
        for v in result.violations:
            assert v["msg"] == "{field}: {type}: {detail}".format(**v["details"])
        return result.outcome == "allowed", sorted((v["constraint"], v["msg"]) for v in result.violations)
    request = request_from_document(Document("upstream", _review_document(case)))
    assert isinstance(request, AdmissionRequest)
    result = runner_review(
        case.profile,
        request,
        providers={PROVIDER: FailingProvider(case.provider_error)},
        objects=list(case.cluster),
        variant=EXTERNAL_DATA_VARIANT,
    )
    assert result.errors == []
    return result.allowed, sorted((v.constraint, v.msg) for v in result.violations)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_upstream_case(tmp_path, case: Upstream):
    allowed, reported = _reported(tmp_path, case)
    wanted = sorted((e.rule, e.msg) for e in (*case.expected, *case.also))
    assert reported == wanted
    assert allowed == (case.warn_only or not wanted)


def test_every_profile_replays_upstream_cases():
    """Each profile replays the tables of its own release line; every id is unique."""
    counts = {p: sum(1 for c in CASES if c.profile == p) for p in ("v2.0", "v2.1", "v2.2", "v2.3")}
    assert counts == {"v2.0": 67, "v2.1": 39, "v2.2": 78, "v2.3": 87}, counts
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.profile for c in CASES} == {p.name for p in generated_profiles()}
