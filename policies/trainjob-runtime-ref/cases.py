"""Spec E2-E5 (research C2, C3, C5, C6): the runtime a TrainJob references exists, and the TrainJob's
initializers and overrides fit that runtime's template."""

from __future__ import annotations

from dataclasses import dataclass

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import container, job, override_entry, runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile


@dataclass(frozen=True)
class RuntimeRefSettings:
    duplicate_target_check: bool
    """E5 (v2.0 only): a targetJob named twice over all override entries is a Duplicate."""
    initializer_volume_mount_check: bool
    """E4 (v2.3 only, kubeflow/trainer#3714): a configured initializer's container mounts the volume `initializer`."""


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": RuntimeRefSettings(duplicate_target_check=True, initializer_volume_mount_check=False),
    "v2.1": RuntimeRefSettings(duplicate_target_check=False, initializer_volume_mount_check=False),
    "v2.2": RuntimeRefSettings(duplicate_target_check=False, initializer_volume_mount_check=False),
    "v2.3": RuntimeRefSettings(duplicate_target_check=False, initializer_volume_mount_check=True),
}

REF = "spec.runtimeRef"
ENV = "must not have envs for the dataset-initializer, model-initializer, node containers"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
HTTP_PATH = "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"


def not_found(kind: str, name: str) -> Expected:
    lower = kind[0].lower() + kind[1:]
    return Expected(
        REF,
        "Invalid",
        f'{kind}.trainer.kubeflow.org "{name}" not found: specified {lower} must be created before the TrainJob is '
        "created",
    )


def not_synced(kind: str) -> Expected:
    return Expected(
        REF, "Internal", f"{kind} objects are not synced into Gatekeeper's inventory, so the runtime cannot be read"
    )


def missing_target(p: Profile) -> str:
    if p.override_field == "runtimePatches":
        return "must not have replicated job that doesn't exist in the runtime job template"
    return "must not have targetJob that doesn't exist in the runtime job template"


def _manager_cases(p: Profile, cluster: tuple) -> list[Case]:
    def patched(manager: str) -> dict:
        return trainjob(p, overrides=[override_entry(p, ["node"], manager=manager)])

    path = "spec.runtimePatches.manager"
    return [
        Case(
            "manager_domain_prefixed_allowed",
            "A manager like kueue.x-k8s.io/multikueue is a domain-prefixed path.",
            patched("kueue.x-k8s.io/multikueue"),
            cluster=cluster,
        ),
        Case(
            "manager_without_path",
            "v2.2+: a manager without `/` (or with an empty host or path) is not a domain-prefixed path.",
            patched("site-controller"),
            cluster=cluster,
            expected=(Expected(path, "Invalid", 'must be a domain-prefixed path (such as "acme.io/foo")'),),
        ),
        Case(
            "manager_empty_path",
            "v2.2+: `acme.io/` has an empty path.",
            patched("acme.io/"),
            cluster=cluster,
            expected=(Expected(path, "Invalid", 'must be a domain-prefixed path (such as "acme.io/foo")'),),
        ),
        Case(
            "manager_host_not_subdomain",
            "v2.2+: the host must be a lowercase RFC 1123 subdomain (apimachinery's message).",
            patched("Acme.io/foo"),
            cluster=cluster,
            expected=(Expected(path, "Invalid", SUBDOMAIN),),
        ),
        Case(
            "manager_host_too_long",
            "v2.2+: a host over 253 characters gets the length error as well as the regex one.",
            patched("a" * 254 + "-/foo"),
            cluster=cluster,
            expected=(
                Expected(path, "Invalid", "must be no more than 253 characters"),
                Expected(path, "Invalid", SUBDOMAIN),
            ),
        ),
        Case(
            "manager_path_characters",
            "v2.2+: the path must be RFC 3986 path characters (a space is not).",
            patched("acme.io/foo bar"),
            cluster=cluster,
            expected=(Expected(path, "Invalid", HTTP_PATH),),
        ),
        Case(
            "manager_empty",
            "v2.2+: an empty manager is Required (the CRD's minLength keeps it from a real cluster).",
            patched(""),
            cluster=cluster,
            expected=(Expected(path, "Required", ""),),
        ),
    ]


def volume_mount_missing(initializer: str) -> Expected:
    return Expected(
        REF,
        "Invalid",
        f"must have volumeMount with name - initializer in container {initializer} of the {initializer} job",
    )


def _volume_mount_cases(p: Profile) -> list[Case]:
    """E4's v2.3 volumeMount check (kubeflow/trainer#3714), built for every profile: earlier ones admit them all."""
    checked = RELEASES[p.name].initializer_volume_mount_check

    def denied(*initializers: str) -> tuple[Expected, ...]:
        return tuple(volume_mount_missing(i) for i in initializers) if checked else ()

    bare = runtime(
        jobs=[
            job("dataset-initializer", ancestor="dataset-initializer", initializer_mounts=False),
            job("model-initializer", ancestor="model-initializer", initializer_mounts=False),
            job("node", ancestor="trainer"),
        ]
    )
    wrong_name = runtime(
        jobs=[
            job("dataset-initializer", ancestor="dataset-initializer"),
            job("model-initializer", ancestor="model-initializer", initializer_mounts=False),
            job("node", ancestor="trainer"),
        ]
    )
    model_job = wrong_name["spec"]["template"]["spec"]["replicatedJobs"][1]
    model_job["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "model-cache", "mountPath": "/workspace/model"}
    ]
    sidecar_mount = runtime(
        jobs=[
            job("dataset-initializer", containers=["dataset-initializer", "sidecar"], initializer_mounts=False),
            job("node", ancestor="trainer"),
        ]
    )
    sidecar_mount["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][1]["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace/dataset"}]
    init_mount = runtime(
        jobs=[
            job("dataset-initializer", containers=["loader"], init_containers=["dataset-initializer"]),
            job("node", ancestor="trainer"),
        ]
    )
    init_mount["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "initContainers"
    ][0]["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace/dataset"}]
    both = {"dataset": {"storageUri": "hf://d"}, "model": {"storageUri": "hf://m"}}
    mount = {
        "name": "dataset-initializer",
        "volumeMounts": [{"name": "initializer", "mountPath": "/workspace/dataset"}],
    }
    return [
        Case(
            "initializer_volume_mounts_missing",
            "v2.3: both configured initializers' containers lack a volumeMount named `initializer`: one error each "
            "(earlier releases do not check mounts).",
            trainjob(p, initializer=both),
            cluster=(bare,),
            expected=denied("dataset-initializer", "model-initializer"),
        ),
        Case(
            "initializer_volume_mount_other_name",
            "v2.3: a mount of another volume at the usual path does not count; the dataset initializer's mount "
            "is fine.",
            trainjob(p, initializer=both),
            cluster=(wrong_name,),
            expected=denied("model-initializer"),
        ),
        Case(
            "initializer_volume_mount_on_other_container",
            "v2.3: the mount must be on the container named like the job, not on a sidecar of that job.",
            trainjob(p, initializer={"dataset": {}}),
            cluster=(sidecar_mount,),
            expected=denied("dataset-initializer"),
        ),
        Case(
            "initializer_volume_mount_on_init_container",
            "v2.3: an initContainer named dataset-initializer passes the container check, but upstream reads the "
            "mount from the main containers only, so its own mount does not count.",
            trainjob(p, initializer={"dataset": {}}),
            cluster=(init_mount,),
            expected=denied("dataset-initializer"),
        ),
        Case(
            "initializer_volume_mount_not_needed",
            "A runtime without initializer mounts is fine for a TrainJob that configures no initializer.",
            trainjob(p),
            cluster=(bare,),
        ),
        Case(
            "initializer_volume_mount_from_override",
            "An override of the initializer container that adds the mount: v2.3 validates the runtime template "
            "after merging the TrainJob's runtimePatches, so the mount counts.",
            trainjob(
                p,
                initializer={"dataset": {}},
                overrides=[override_entry(p, ["dataset-initializer"], containers=[mount])],
            ),
            cluster=(bare,),
        ),
        Case(
            "update_checks_initializer_volume_mount",
            "UPDATE is checked too.",
            trainjob(p, initializer={"model": {}}, extra={"suspend": True}),
            operation="UPDATE",
            old_object=trainjob(p, initializer={"model": {}}, extra={"suspend": True}),
            cluster=(bare,),
            expected=denied("model-initializer"),
        ),
        Case(
            "audit_reports_initializer_volume_mount_missing",
            "Audit reports a stored TrainJob whose runtime's initializer container lost its mount.",
            trainjob(p, initializer={"dataset": {}}),
            operation=AUDIT,
            cluster=(bare,),
            expected=denied("dataset-initializer"),
        ),
    ]


def cases(p: Profile) -> list[Case]:
    field = p.override_path
    torch = runtime()
    other = runtime("other-runtime")
    cluster = (torch,)

    def invalid(detail: str) -> Expected:
        return Expected(field, "Invalid", detail)

    def with_overrides(*entries: dict) -> dict:
        return trainjob(p, overrides=list(entries))

    ghost_with_containers = override_entry(
        p, ["ghost"], containers=[container("node")], init_containers=[container("x")]
    )
    ghost_expected = [invalid(missing_target(p))]
    if p.override_field != "runtimePatches":
        ghost_expected += [
            invalid("must not have container that doesn't exist in the runtime job ghost"),
            invalid("must not have initContainer that doesn't exist in the runtime job ghost"),
        ]
    duplicates = with_overrides(
        override_entry(p, ["node"]), override_entry(p, ["node", "dataset-initializer", "node"], manager="acme.io/b")
    )
    not_a_list = trainjob(p)
    not_a_list["spec"][p.override_field] = "not-a-list"
    result = [
        Case(
            "cluster_runtime_found",
            "runtimeRef with only a name: kind defaults to ClusterTrainingRuntime, apiGroup to trainer.kubeflow.org.",
            trainjob(p),
            cluster=cluster,
        ),
        Case(
            "overrides_not_a_list",
            "The overrides field is not a list (the CRD schema refuses it first): no override to check.",
            not_a_list,
            cluster=cluster,
        ),
        Case(
            "training_runtime_in_namespace",
            "A TrainingRuntime is looked up in the TrainJob's namespace.",
            trainjob(p, runtime="ns-runtime", kind="TrainingRuntime"),
            cluster=(runtime("ns-runtime", kind="TrainingRuntime"),),
        ),
        Case(
            "training_runtime_other_namespace",
            "A TrainingRuntime of another namespace is not found (upstream's NotFound text names the Kind).",
            trainjob(p, runtime="ns-runtime", kind="TrainingRuntime"),
            cluster=(runtime("ns-runtime", kind="TrainingRuntime", namespace="team-b"),),
            expected=(not_found("TrainingRuntime", "ns-runtime"),),
        ),
        Case(
            "cluster_runtime_not_found",
            "A missing ClusterTrainingRuntime (reported at spec.runtimeRef; upstream's `spec.RuntimeRef` typo "
            "not copied).",
            trainjob(p, runtime="missing"),
            cluster=(other,),
            expected=(not_found("ClusterTrainingRuntime", "missing"),),
        ),
        Case(
            "runtime_kinds_not_synced",
            "No ClusterTrainingRuntime in data.inventory at all: the violation says the kind is not synced.",
            trainjob(p),
            expected=(not_synced("ClusterTrainingRuntime"),),
        ),
        Case(
            "training_runtime_kind_not_synced",
            "ClusterTrainingRuntimes synced but no TrainingRuntime anywhere: that kind is not synced.",
            trainjob(p, kind="TrainingRuntime"),
            cluster=cluster,
            expected=(not_synced("TrainingRuntime"),),
        ),
        Case(
            "unsupported_runtime_kind",
            "A kind other than (Cluster)TrainingRuntime.trainer.kubeflow.org: `unsupported runtime: <kind>.<group>`.",
            trainjob(p, kind="JobSet", api_group="jobset.x-k8s.io"),
            cluster=cluster,
            expected=(Expected(REF, "Invalid", "unsupported runtime: JobSet.jobset.x-k8s.io"),),
        ),
        Case(
            "unsupported_runtime_empty_group",
            'apiGroup "" prints the kind alone (Kubernetes GroupKind.String()).',
            trainjob(p, kind="TrainingRuntime", api_group=""),
            cluster=cluster,
            expected=(Expected(REF, "Invalid", "unsupported runtime: TrainingRuntime"),),
        ),
        Case(
            "runtime_kind_is_case_sensitive",
            "trainingruntime (lower case) is unsupported.",
            trainjob(p, kind="trainingruntime"),
            cluster=cluster,
            expected=(Expected(REF, "Invalid", "unsupported runtime: trainingruntime.trainer.kubeflow.org"),),
        ),
        Case(
            "missing_runtime_stops_other_checks",
            "Upstream returns only the NotFound error: overrides and initializers are not checked.",
            trainjob(p, runtime="missing", initializer={"dataset": {}}, overrides=[override_entry(p, ["ghost"])]),
            cluster=cluster,
            expected=(not_found("ClusterTrainingRuntime", "missing"),),
        ),
        Case(
            "initializers_present",
            "Dataset and model initializers with their jobs and containers, each mounting the volume `initializer`.",
            trainjob(p, initializer={"dataset": {"storageUri": "hf://d"}, "model": {"storageUri": "hf://m"}}),
            cluster=cluster,
        ),
        Case(
            "dataset_initializer_job_missing",
            "spec.initializer.dataset set ({} counts) and no dataset-initializer job.",
            trainjob(p, initializer={"dataset": {}}),
            cluster=(runtime(jobs=[job("node", ancestor="trainer")]),),
            expected=(
                Expected(
                    REF,
                    "Invalid",
                    "must have dataset-initializer job when trainJob is configured with input datasetConfig",
                ),
            ),
        ),
        Case(
            "model_initializer_job_missing",
            "spec.initializer.model set and no model-initializer job; dataset null is unset.",
            trainjob(p, initializer={"model": {"storageUri": "hf://m"}, "dataset": None}),
            cluster=(runtime(jobs=[job("node", ancestor="trainer")]),),
            expected=(
                Expected(
                    REF, "Invalid", "must have model-initializer job when trainJob is configured with input modelConfig"
                ),
            ),
        ),
        Case(
            "initializer_containers_missing",
            "The initializer jobs exist but have no container of their name.",
            trainjob(p, initializer={"dataset": {}, "model": {}}),
            cluster=(
                runtime(
                    jobs=[
                        job("dataset-initializer", containers=["loader"]),
                        job("model-initializer", containers=["loader"]),
                        job("node", ancestor="trainer"),
                    ]
                ),
            ),
            expected=(
                Expected(
                    REF, "Invalid", "must have container with name - dataset-initializer in the dataset-initializer job"
                ),
                Expected(
                    REF, "Invalid", "must have container with name - model-initializer in the model-initializer job"
                ),
            ),
        ),
        Case(
            "initializer_init_container_counts",
            "An initContainer named dataset-initializer satisfies the container check (v2.3 then asks for the "
            "volumeMount on a main container of that name: initializer_volume_mount_on_init_container).",
            trainjob(p, initializer={"dataset": {}}),
            cluster=(
                runtime(
                    jobs=[
                        job("dataset-initializer", containers=["loader"], init_containers=["dataset-initializer"]),
                        job("node", ancestor="trainer"),
                    ]
                ),
            ),
            expected=(volume_mount_missing("dataset-initializer"),)
            if RELEASES[p.name].initializer_volume_mount_check
            else (),
        ),
        Case(
            "overrides_fit_the_runtime",
            "Overrides of existing jobs and containers (a container override may name an initContainer), env on a "
            "non-reserved container, empty env on node.",
            with_overrides(
                override_entry(
                    p,
                    ["node"],
                    containers=[
                        container("sidecar", [{"name": "A", "value": "1"}]),
                        container("node", []),
                        container("setup"),
                    ],
                    init_containers=[container("setup")],
                ),
                override_entry(p, ["dataset-initializer"], manager="acme.io/b"),
            ),
            cluster=cluster,
        ),
        Case(
            "override_target_missing",
            "A target job the runtime lacks.",
            with_overrides(override_entry(p, ["ghost"])),
            cluster=cluster,
            expected=(invalid(missing_target(p)),),
        ),
        Case(
            "override_target_missing_with_containers",
            "v2.0/v2.1 do not `continue` after a missing targetJob, so its container overrides are reported too; "
            "v2.2+ skip them.",
            with_overrides(ghost_with_containers),
            cluster=cluster,
            expected=tuple(ghost_expected),
        ),
        Case(
            "override_container_missing",
            "A container the runtime's job lacks: checked before merging (upstream merges first and lets it through).",
            with_overrides(override_entry(p, ["node"], containers=[container("ghost")])),
            cluster=cluster,
            expected=(invalid("must not have container that doesn't exist in the runtime job node"),),
        ),
        Case(
            "override_init_container_missing",
            "An initContainer the runtime's job lacks.",
            with_overrides(override_entry(p, ["dataset-initializer"], init_containers=[container("ghost")])),
            cluster=cluster,
            expected=(
                invalid("must not have initContainer that doesn't exist in the runtime job dataset-initializer"),
            ),
        ),
        Case(
            "override_env_on_reserved_containers",
            "env on node, dataset-initializer or model-initializer (one collapsed error).",
            with_overrides(
                override_entry(p, ["node"], containers=[container("node", [{"name": "A", "value": "1"}])]),
                override_entry(
                    p,
                    ["model-initializer"],
                    containers=[container("model-initializer", [{"name": "B"}])],
                    manager="acme.io/b",
                ),
            ),
            cluster=cluster,
            expected=(invalid(ENV),),
        ),
        Case(
            "override_duplicate_target",
            "v2.0: a targetJob named again (across or within entries) is a Duplicate; later profiles allow it.",
            duplicates,
            cluster=cluster,
            expected=(Expected(field, "Duplicate", '"node"'),) if RELEASES[p.name].duplicate_target_check else (),
        ),
        Case(
            "update_checked",
            "UPDATE is checked too (a suspended TrainJob, whose overrides may change).",
            trainjob(p, overrides=[override_entry(p, ["ghost"])], extra={"suspend": True}),
            operation="UPDATE",
            old_object=trainjob(p, extra={"suspend": True}),
            cluster=cluster,
            expected=(invalid(missing_target(p)),),
        ),
        Case(
            "audit_reports_missing_runtime",
            "Audit reports a stored TrainJob whose runtime is gone.",
            trainjob(p, runtime="missing"),
            operation=AUDIT,
            cluster=cluster,
            expected=(not_found("ClusterTrainingRuntime", "missing"),),
        ),
        Case(
            "delete_not_checked",
            "DELETE is not checked.",
            None,
            operation="DELETE",
            old_object=trainjob(p, runtime="missing"),
        ),
    ]
    if p.override_field == "runtimePatches":
        result += _manager_cases(p, cluster)
    return result + _volume_mount_cases(p)
