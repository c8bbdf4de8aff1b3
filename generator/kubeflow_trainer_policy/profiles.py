"""Trainer version profiles: the data that makes one Rego source fit every Trainer release.

Each profile becomes the lib `data.lib.trainer.profile` (profiles/<name>/profile.rego, generated), which the
profile's templates carry and `opa test policies/ profiles/<name>/` loads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A Trainer release line: what every rule shares about it. What one rule does differently per release
    is a table in its src.rego keyed by the profile's name."""

    name: str
    releases: str
    """The Trainer release the profile follows: the newest patch release of its minor (a minor's patches can change
    admission, as v2.2.1 back-ported v2.3's suspend rule), the tag whose source its rules are read from."""
    override_field: str
    """The TrainJob override list, under `spec` (podSpecOverrides, podTemplateOverrides, runtimePatches)."""
    generated: bool = True
    """Whether `trainer-policy generate` emits a Gatekeeper bundle for it today."""

    @property
    def override_path(self) -> str:
        return f"spec.{self.override_field}"


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(name="v2.0", releases="v2.0.1", override_field="podSpecOverrides"),
        Profile(name="v2.1", releases="v2.1.0", override_field="podTemplateOverrides"),
        Profile(name="v2.2", releases="v2.2.1", override_field="runtimePatches"),
        Profile(name="v2.3", releases="v2.3.0", override_field="runtimePatches"),
    )
}
DEFAULT_PROFILE = "v2.0"
UNIT_TEST_PROFILE = DEFAULT_PROFILE
"""The profile whose cases the docs show as examples; profiles/ and bundles/ hold every generated profile."""


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})") from None


def generated_profiles() -> list[Profile]:
    return [p for p in PROFILES.values() if p.generated]
