"""Trainer version profiles: the data that makes one rule template fit every Trainer release."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SuspendRule = Literal["new", "old_or_new"]


@dataclass(frozen=True)
class Profile:
    """What differs between Trainer releases, as template variables (never a code fork)."""

    name: str
    releases: str
    override_field: str
    """The TrainJob override list, under `spec` (podSpecOverrides, podTemplateOverrides, runtimePatches)."""
    override_prefix: str
    """The message prefix that follows the field (PodSpecOverrides, ...)."""
    suspend_rule: SuspendRule
    """`new`: only the new object's spec.suspend counts; `old_or_new`: either object suspended."""
    launcher_is_reserved: bool
    """Rule D: a replicated job named `launcher` is reserved (v2.0 only)."""
    requires_ancestor_container: bool
    """Rule D: an ancestor-labelled job must contain its container (v2.1+)."""
    honours_validation_disabled: bool
    """Rule D: runtimes labelled trainer.kubeflow.org/webhook-validation=disabled are skipped (v2.3+)."""
    generated: bool = True
    """Whether `trainer-policy generate` emits a Gatekeeper bundle for it today."""
    managed_by_immutable_detail: str = "ManagedBy value is immutable"
    """Rule C: the immutability detail (the webhook's text until v2.1, the CRD's CEL `field is immutable` from v2.2)."""
    name_rule: Literal["webhook", "cel"] = "cel"
    """E1: `webhook` (v2.0: DNS-1035 details, CREATE) or `cel` (v2.1+: the CRD's two CEL messages)."""
    num_proc_per_node_int_or_string: bool = False
    """v2.0/v2.1: numProcPerNode is int-or-string (MPI int check, Torch string check; Torch runs only when set)."""
    duplicate_target_check: bool = False
    """E5 (v2.0 only): a targetJob named twice over all override entries is a Duplicate."""
    torchtune_qlora_checks: bool = True
    """C9 QLoRA checks (v2.1+)."""
    torchtune_lora_args_checks: bool = False
    """C9 LoRA multi-node and immutable trainer args checks (v2.3)."""
    immutable_fields: tuple[tuple[str, str], ...] = (
        ("runtimeRef", "field is immutable"),
        ("initializer", "field is immutable"),
        ("trainer", "field is immutable"),
        ("activeDeadlineSeconds", "field is immutable"),
    )
    """C10: (spec field, CEL message) pairs immutable on UPDATE (managedBy is rule C's)."""
    patch_fields_immutable: bool = True
    """C10 (v2.2+): six fields of each runtime patch's pod spec are immutable (CEL transition rules)."""
    deprecated_runtime_warnings: bool = True
    """C4 (v2.1+): warnings for ClusterTrainingRuntimes labelled trainer.kubeflow.org/support=deprecated."""

    @property
    def override_path(self) -> str:
        return f"spec.{self.override_field}"

    @property
    def suspend_detail(self) -> str:
        suffix = " before or after the update" if self.suspend_rule == "old_or_new" else ""
        return f"{self.override_prefix} can only be modified when the TrainJob is suspended{suffix}"

    def active_detail(self, replicated_job: str) -> str:
        return (
            f"{self.override_prefix} cannot be modified when the JobSet's ReplicatedJob {replicated_job} "
            "is still active"
        )


V20_IMMUTABLE = (("runtimeRef", "runtimeRef is immutable"),)
"""v2.0 and v2.1: only runtimeRef (besides managedBy) is immutable, with its own CEL message."""

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "v2.0",
            "v2.0.0, v2.0.1",
            "podSpecOverrides",
            "PodSpecOverrides",
            "new",
            True,
            False,
            False,
            name_rule="webhook",
            num_proc_per_node_int_or_string=True,
            duplicate_target_check=True,
            torchtune_qlora_checks=False,
            immutable_fields=V20_IMMUTABLE,
            patch_fields_immutable=False,
            deprecated_runtime_warnings=False,
        ),
        Profile(
            "v2.1",
            "v2.1.x",
            "podTemplateOverrides",
            "PodTemplateOverrides",
            "new",
            False,
            True,
            False,
            num_proc_per_node_int_or_string=True,
            immutable_fields=V20_IMMUTABLE,
            patch_fields_immutable=False,
        ),
        Profile(
            "v2.2",
            "v2.2.x",
            "runtimePatches",
            "RuntimePatches",
            "new",
            False,
            True,
            False,
            managed_by_immutable_detail="field is immutable",
        ),
        Profile(
            "v2.3",
            "v2.3.0 and later",
            "runtimePatches",
            "RuntimePatches",
            "old_or_new",
            False,
            True,
            True,
            managed_by_immutable_detail="field is immutable",
            torchtune_lora_args_checks=True,
        ),
    )
}
DEFAULT_PROFILE = "v2.0"
UNIT_TEST_PROFILE = DEFAULT_PROFILE
"""The profile whose cases the docs show as examples; policies/<profile>/ and bundles hold every generated profile."""


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})") from None


def generated_profiles() -> list[Profile]:
    return [p for p in PROFILES.values() if p.generated]
