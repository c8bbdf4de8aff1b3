"""Spec D: reserved replicated jobs of (Cluster)TrainingRuntimes run exactly one replica."""

from __future__ import annotations

from dataclasses import dataclass

from kubeflow_trainer_policy.catalog.fixtures import replicated_job, runtime
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.profiles import Profile


@dataclass(frozen=True)
class ReservedJobSettings:
    launcher_is_reserved: bool
    """A replicated job named `launcher` is reserved (v2.0 only)."""
    requires_ancestor_container: bool
    """An ancestor-labelled job must contain its container (v2.1+)."""
    honours_validation_disabled: bool
    """Runtimes labelled trainer.kubeflow.org/webhook-validation=disabled are skipped (v2.3+)."""


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": ReservedJobSettings(
        launcher_is_reserved=True, requires_ancestor_container=False, honours_validation_disabled=False
    ),
    "v2.1": ReservedJobSettings(
        launcher_is_reserved=False, requires_ancestor_container=True, honours_validation_disabled=False
    ),
    "v2.2": ReservedJobSettings(
        launcher_is_reserved=False, requires_ancestor_container=True, honours_validation_disabled=False
    ),
    "v2.3": ReservedJobSettings(
        launcher_is_reserved=False, requires_ancestor_container=True, honours_validation_disabled=True
    ),
}

DISABLED = {"trainer.kubeflow.org/webhook-validation": "disabled"}


def _replicas(i: int) -> Expected:
    return Expected(f"spec.template.spec.replicatedJobs[{i}].replicas", "Invalid", "always must be 1")


def _container(i: int, ancestor: str) -> Expected:
    return Expected(
        f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec.containers",
        "Invalid",
        f"must contain the required container for the ancestor: {ancestor}",
    )


def cases(p: Profile) -> list[Case]:
    good = [
        replicated_job("dataset-initializer", ancestor="dataset-initializer"),
        replicated_job("model-initializer", ancestor="model-initializer", replicas=1),
        replicated_job("node", ancestor="trainer", replicas=1),
    ]
    launcher = runtime([replicated_job("launcher", replicas=2), replicated_job("node", ancestor="trainer")])
    disabled = runtime([replicated_job("node", ancestor="trainer", replicas=3)], labels=DISABLED)
    no_node = runtime(
        [
            replicated_job("node", ancestor="trainer", containers=["worker"], init_containers=["node"]),
            replicated_job("dataset-initializer", ancestor="dataset-initializer", containers=[]),
            replicated_job("helper", ancestor="something-else", containers=[]),
        ]
    )
    return [
        Case("reserved_jobs_with_one_replica", "Reserved jobs with replicas 1 or unset (1).", runtime(good)),
        Case(
            "trainer_two_replicas",
            "A trainer-ancestor job with 2 replicas: Invalid.",
            runtime([replicated_job("node", ancestor="trainer", replicas=2)]),
            expected=(_replicas(0),),
        ),
        Case(
            "initializers_each_reported",
            "Each reserved job is reported at its own index.",
            runtime(
                [
                    replicated_job("dataset-initializer", ancestor="dataset-initializer", replicas=3),
                    replicated_job("model-initializer", ancestor="model-initializer", replicas=0),
                    replicated_job("node", ancestor="trainer", replicas=1),
                ]
            ),
            expected=(_replicas(0), _replicas(1)),
        ),
        Case(
            "unlabelled_jobs_not_checked",
            "Jobs with other or no ancestor labels are not checked.",
            runtime(
                [
                    replicated_job("workers", replicas=4),
                    replicated_job("ps", ancestor="other", replicas=2),
                    replicated_job("node", ancestor="trainer"),
                ]
            ),
        ),
        Case(
            "null_replicas_defaults_to_one",
            "replicas: null is unset.",
            runtime([{**replicated_job("node", ancestor="trainer"), "replicas": None}]),
        ),
        Case(
            "launcher_name_is_reserved_in_v2_0",
            "v2.0: a job named launcher is reserved; later profiles check ancestor labels only.",
            launcher,
            expected=(_replicas(0),) if RELEASES[p.name].launcher_is_reserved else (),
        ),
        Case(
            "cluster_runtime_checked",
            "ClusterTrainingRuntime is checked the same way.",
            runtime([replicated_job("node", ancestor="trainer", replicas=2)], kind="ClusterTrainingRuntime"),
            expected=(_replicas(0),),
        ),
        Case(
            "update_checked",
            "UPDATE is checked too (upstream checks TrainingRuntime on CREATE only).",
            runtime([replicated_job("node", ancestor="trainer", replicas=2)]),
            operation="UPDATE",
            old_object=runtime([replicated_job("node", ancestor="trainer", replicas=1)]),
            expected=(_replicas(0),),
        ),
        Case(
            "audit_checked",
            "Audit reports existing runtimes.",
            runtime([replicated_job("node", ancestor="trainer", replicas=2)]),
            operation=AUDIT,
            expected=(_replicas(0),),
        ),
        Case(
            "delete_not_checked",
            "DELETE is not checked.",
            None,
            operation="DELETE",
            old_object=runtime([replicated_job("node", ancestor="trainer", replicas=2)]),
        ),
        Case(
            "validation_disabled_label",
            "v2.3 honours trainer.kubeflow.org/webhook-validation: disabled; earlier profiles ignore it.",
            disabled,
            expected=() if RELEASES[p.name].honours_validation_disabled else (_replicas(0),),
        ),
        Case(
            "validation_disabled_label_added_by_update",
            "An UPDATE that adds the disabled label is validated: upstream's objectSelector matches the old object.",
            disabled,
            operation="UPDATE",
            old_object=runtime([replicated_job("node", ancestor="trainer", replicas=3)]),
            expected=(_replicas(0),),
        ),
        Case(
            "validation_disabled_label_kept_by_update",
            "An UPDATE of a runtime labelled disabled before and after is not validated in v2.3.",
            disabled,
            operation="UPDATE",
            old_object=disabled,
            expected=() if RELEASES[p.name].honours_validation_disabled else (_replicas(0),),
        ),
        Case(
            "ancestor_requires_container",
            "v2.1+: an ancestor-labelled job needs its container (node, dataset-initializer, model-initializer); "
            "an initContainer does not count.",
            no_node,
            expected=(_container(0, "trainer"), _container(1, "dataset-initializer"))
            if RELEASES[p.name].requires_ancestor_container
            else (),
        ),
    ]
