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


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("v2.0", "v2.0.0, v2.0.1", "podSpecOverrides", "PodSpecOverrides", "new", True, False, False),
        Profile(
            "v2.1", "v2.1.x", "podTemplateOverrides", "PodTemplateOverrides", "new", False, True, False, generated=False
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
            generated=False,
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
