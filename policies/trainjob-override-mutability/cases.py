"""Spec A+B: TrainJob overrides (and the schedulingGates inside them) change only while allowed.

This rule reads the JobSet from data.inventory (JobSets synced by Gatekeeper; its Rego never mentions
external_data, so gator can run its suite). trainjob-override-mutability-external-data has the same cases
and asks the external data provider instead (both rules use lib.trainer.mutability).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kubeflow_trainer_policy.catalog.fixtures import KUEUE_GATE, jobset, override, trainjob
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import with_runtime
from kubeflow_trainer_policy.profiles import Profile

KEY = "team-a/job"


@dataclass(frozen=True)
class MutabilitySettings:
    override_prefix: str
    """The message prefix naming the override list (PodSpecOverrides, PodTemplateOverrides, RuntimePatches)."""
    suspend_rule: Literal["new", "old_or_new"]
    """`new`: only the new object's spec.suspend counts (v2.0, v2.1, v2.2.0); `old_or_new`: either object suspended
    (v2.3, and v2.2.1, which back-ported it)."""

    @property
    def suspend_detail(self) -> str:
        suffix = " before or after the update" if self.suspend_rule == "old_or_new" else ""
        return f"{self.override_prefix} can only be modified when the TrainJob is suspended{suffix}"

    def active_detail(self, replicated_job: str) -> str:
        return (
            f"{self.override_prefix} cannot be modified when the JobSet's ReplicatedJob {replicated_job} "
            "is still active"
        )


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": MutabilitySettings(override_prefix="PodSpecOverrides", suspend_rule="new"),
    "v2.1": MutabilitySettings(override_prefix="PodTemplateOverrides", suspend_rule="new"),
    "v2.2": MutabilitySettings(override_prefix="RuntimePatches", suspend_rule="old_or_new"),
    "v2.3": MutabilitySettings(override_prefix="RuntimePatches", suspend_rule="old_or_new"),
}


def shared_cases(p: Profile) -> list[Case]:
    """Cases that hold whether the JobSet state comes from the inventory or from the provider."""
    field = p.override_path
    forbidden_suspend = Expected(field, "Forbidden", RELEASES[p.name].suspend_detail)

    def active(job: str) -> Expected:
        return Expected(field, "Forbidden", RELEASES[p.name].active_detail(job))

    running = jobset(statuses=[{"name": "node", "active": 2, "ready": 2}])
    two_active = jobset(
        statuses=[
            {"name": "dataset-initializer", "active": 0, "succeeded": 1},
            {"name": "node", "active": 4},
            {"name": "launcher", "active": 1},
        ]
    )
    finished = jobset(
        statuses=[
            {"name": "node", "active": 0, "ready": 3, "succeeded": 1, "failed": 2, "suspended": 1},
        ]
    )
    before = [override(gates=["a"])]
    after = [override(gates=["b"])]

    def update(name: str, description: str, old: dict, new: dict, **kw: object) -> Case:
        return Case(name, description, new, operation="UPDATE", old_object=old, **kw)  # type: ignore[arg-type]

    unsuspend_expected = () if RELEASES[p.name].suspend_rule == "old_or_new" else (forbidden_suspend,)
    return [
        Case(
            "create_is_never_checked",
            "CREATE is never checked, even unsuspended with an active JobSet.",
            trainjob(p, overrides=before),
            cluster=(running,),
        ),
        update(
            "unchanged_overrides_allowed",
            "Overrides unchanged: allowed whatever else or the JobSet state.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=before, suspend=False),
            cluster=(running,),
        ),
        update(
            "absent_null_and_empty_are_equal",
            "An absent list, null and [] are equal.",
            trainjob(p),
            trainjob(p, overrides=[]),
            cluster=(running,),
        ),
        update(
            "null_equals_empty",
            "null and [] are equal.",
            trainjob(p, unset=(p.override_field,)),
            trainjob(p, overrides=[]),
            cluster=(running,),
        ),
        update(
            "quantities_compare_by_value",
            "1 == 1000m and 1Gi == 1024Mi: no change.",
            trainjob(p, overrides=[override(requests={"cpu": "1", "memory": "1Gi"})]),
            trainjob(p, overrides=[override(requests={"cpu": "1000m", "memory": "1024Mi"})]),
            cluster=(running,),
        ),
        update(
            "quantity_value_change_is_a_change",
            "2 != 1000m: a change, refused while running unsuspended.",
            trainjob(p, overrides=[override(requests={"cpu": "1000m"})]),
            trainjob(p, overrides=[override(requests={"cpu": "2"})]),
            cluster=(running,),
            expected=(forbidden_suspend,),
        ),
        update(
            "order_matters",
            "The list is atomic: reordering entries is a change.",
            trainjob(p, overrides=[override("node", gates=["a"]), override("launcher")]),
            trainjob(p, overrides=[override("launcher"), override("node", gates=["a"])]),
            expected=(forbidden_suspend,),
        ),
        update(
            "changed_while_not_suspended",
            "Changed without suspend: Forbidden (the JobSet is not consulted).",
            trainjob(p, overrides=before),
            trainjob(p, overrides=after),
            expected=(forbidden_suspend,),
        ),
        update(
            "suspend_must_be_exactly_true",
            'suspend: "true" (a string) is not suspended.',
            trainjob(p, overrides=before),
            trainjob(p, overrides=after, suspend="true"),
            expected=(forbidden_suspend,),
        ),
        update(
            "change_and_suspend_in_one_request",
            "Changing overrides and suspending in one request passes.",
            trainjob(p, overrides=before, suspend=False),
            trainjob(p, overrides=after, suspend=True),
        ),
        update(
            "change_and_unsuspend_in_one_request",
            "Changing overrides and unsuspending in one request: denied in v2.0 and v2.1 (new object only); "
            "allowed from v2.2.1 (old object suspended) while the JobSet does not exist.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=False),
            expected=unsuspend_expected,
        ),
        update(
            "suspended_jobset_not_found",
            "A JobSet that does not exist is inactive.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
        ),
        update(
            "suspended_only_active_counts",
            "ready, succeeded, failed and suspended are ignored; active 0 passes.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            cluster=(finished,),
        ),
        update(
            "suspended_one_violation_per_active_job",
            "One Forbidden per active replicated job, in status order.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            cluster=(two_active,),
            expected=(active("node"), active("launcher")),
        ),
        update(
            "change_and_suspend_while_jobset_active",
            "Suspending and changing overrides in one request while the JobSet still runs: the JobSet check "
            "applies (v2.2.1's own case `forbid atomic update: suspending trainJob with runtimePatches change`).",
            trainjob(p, overrides=before, suspend=False),
            trainjob(p, overrides=after, suspend=True),
            cluster=(running,),
            expected=(active("node"),),
        ),
        Case(
            "audit_has_no_transition",
            "Audit (no operation, no oldObject): the transition rule does not fire.",
            trainjob(p, overrides=after),
            operation=AUDIT,
            cluster=(running,),
        ),
        Case(
            "create_with_scheduling_gate",
            "B: schedulingGates are set freely at CREATE.",
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            cluster=(running,),
        ),
        update(
            "kueue_1_inject_gate_while_suspended",
            "B: Kueue injects its gate while the TrainJob is suspended.",
            trainjob(p, suspend=True),
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            cluster=(finished,),
        ),
        update(
            "kueue_2_remove_gate_add_node_selector",
            "B: Kueue removes the gate and injects a nodeSelector.",
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            trainjob(p, suspend=True, overrides=[override(gates=[], node_selector={"pool": "a100"})]),
            cluster=(finished,),
        ),
        update(
            "kueue_3_unsuspend",
            "B: Kueue unsuspends; the overrides do not change.",
            trainjob(p, suspend=True, overrides=[override(gates=[], node_selector={"pool": "a100"})]),
            trainjob(p, suspend=False, overrides=[override(node_selector={"pool": "a100"})]),
            cluster=(finished,),
        ),
        update(
            "gate_change_while_jobset_active",
            "B: a schedulingGates change while the JobSet runs is refused.",
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            trainjob(p, suspend=True, overrides=[override(gates=[])]),
            cluster=(running,),
            expected=(active("node"),),
        ),
    ]


def inventory_cases(p: Profile) -> list[Case]:
    return with_runtime(shared_cases(p))


def cases(p: Profile) -> list[Case]:
    return inventory_cases(p)
