"""The Rego a profile's templates carry: each rule's src.rego as written, the libs it imports (directly or through
another lib) from policies/lib/trainer/, and the profile's own lib `lib.trainer.profile`, generated from
profiles.py into profiles/<profile>/profile.rego."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from kubeflow_trainer_policy.catalog import LIB_DIR
from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy.render.header import header

PROFILE_LIB = "profile"
"""`data.lib.trainer.profile`: what differs between Trainer releases, as data the rules read."""
PROFILES = "profiles"
CAPABILITIES = f"{PROFILES}/capabilities.json"


@dataclass(frozen=True)
class Lib:
    name: str
    source: str


def yaml_scalar(value: str) -> str:
    """A METADATA value as a YAML scalar: plain when YAML reads it back unchanged, else double-quoted.

    OPA parses METADATA as YAML and refuses the module when that fails (a plain `title: a: b` is a mapping
    error), so every value written into a METADATA block goes through here."""
    text = " ".join(str(value).split())
    try:
        plain_ok = yaml.safe_load(f"k: {text}\n") == {"k": text}
    except yaml.YAMLError:
        plain_ok = False
    return text if plain_ok and " #" not in text else json.dumps(text)


def profile_path(profile: Profile) -> str:
    """profiles/<profile>/profile.rego, relative to the project root."""
    return f"{PROFILES}/{profile.name}/profile.rego"


def profile_lib(profile: Profile) -> Lib:
    """The profile's lib: the release's name and the TrainJob field that holds its overrides."""
    text = (
        header("generator/kubeflow_trainer_policy/profiles.py")
        + "# METADATA\n"
        + f"# title: {yaml_scalar(f'Trainer profile {profile.name}')}\n"
        + "# description: >-\n"
        + f"#   Kubeflow Trainer {profile.releases}: what the rules read about the release. Each rule that differs\n"
        + "#   between releases keeps its own table keyed by `name`.\n"
        + f"package lib.trainer.{PROFILE_LIB}\n\n"
        + f"name := {json.dumps(profile.name)}\n\n"
        + "# The TrainJob's list of overrides, under spec.\n"
        + f"override_field := {json.dumps(profile.override_field)}\n"
    )
    return Lib(PROFILE_LIB, text)


@cache
def _lib_source(lib_dir: Path, name: str) -> str:
    return (lib_dir / f"{name}.rego").read_text(encoding="utf-8")


def lib(name: str, lib_dir: Path = LIB_DIR) -> Lib:
    return Lib(name, _lib_source(lib_dir, name))


def all_libs(lib_dir: Path = LIB_DIR) -> list[Lib]:
    return [lib(p.stem, lib_dir) for p in sorted(lib_dir.glob("*.rego")) if not p.stem.endswith("_test")]


LIB_IMPORT = re.compile(r"^import data\.lib\.trainer\.(\w+)$", re.MULTILINE)
EXTERNAL_DATA_CALL = re.compile(r"^[^#\n]*\bexternal_data\(", re.MULTILINE)


def calls_external_data(source: str) -> bool:
    """Whether a module calls Gatekeeper's external_data builtin (outside comments)."""
    return EXTERNAL_DATA_CALL.search(source) is not None


def shipped_libs(rule: Rule, profile: Profile, lib_dir: Path = LIB_DIR) -> list[Lib]:
    """The libs a template ships with the rule's module: every lib it imports, directly or through another lib,
    by name (the profile's lib for `profile`)."""
    needed: set[str] = set()
    pending = LIB_IMPORT.findall(rule.source)
    while pending:
        name = pending.pop()
        if name not in needed:
            needed.add(name)
            if name != PROFILE_LIB:
                pending += LIB_IMPORT.findall(lib(name, lib_dir).source)
    return [profile_lib(profile) if name == PROFILE_LIB else lib(name, lib_dir) for name in sorted(needed)]
