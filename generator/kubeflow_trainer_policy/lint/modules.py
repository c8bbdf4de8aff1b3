"""Every Rego module that ships: policies/ (the rules and libs, with their tests), each profile's lib
profiles/<profile>/profile.rego, the rego and libs of every ConstraintTemplate under bundles/gatekeeper/, and each
OPA bundle's entry module."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Module:
    path: str
    """Where it lives: a file, or `<template.yaml>#rego` / `<template.yaml>#libs[i]`."""
    text: str
    entry: bool
    """A rule's entry module (a template's rego): Gatekeeper reads its `violation` rules."""
    test: bool
    template: bool = False
    """Gatekeeper loads it (a policies/ module or a template's code): Gatekeeper's rules apply."""


def policy_modules(root: Path) -> list[Module]:
    return [
        Module(
            path.relative_to(root).as_posix(),
            path.read_text(encoding="utf-8"),
            entry=path.name == "src.rego",
            test=path.name.endswith("_test.rego"),
            template=True,
        )
        for path in [*sorted((root / "policies").rglob("*.rego")), *sorted((root / "profiles").glob("*/*.rego"))]
    ]


def template_modules(root: Path) -> list[Module]:
    modules = []
    for template in sorted((root / "bundles" / "gatekeeper").rglob("template.yaml")):
        rel = template.relative_to(root).as_posix()
        source = yaml.safe_load(template.read_text(encoding="utf-8"))["spec"]["targets"][0]["code"][0]["source"]
        modules.append(Module(f"{rel}#rego", source["rego"], entry=True, test=False, template=True))
        modules += [
            Module(f"{rel}#libs[{i}]", lib, entry=False, test=False, template=True)
            for i, lib in enumerate(source["libs"])
        ]
    return modules


def entry_modules(root: Path) -> list[Module]:
    """The plain-OPA entry point (kubeflow/trainer/decision.rego) each profile's OPA bundle ships, as
    `trainer-policy bundle build` writes it."""
    from kubeflow_trainer_policy.bundle.build import build_bundle
    from kubeflow_trainer_policy.bundle.plain_opa import ENTRY_MODULE

    modules = []
    for folder in sorted(p for p in (root / "bundles" / "gatekeeper").glob("*") if p.is_dir()):
        content = build_bundle(folder, folder.name, "0.0.0")
        text = content.files[ENTRY_MODULE].decode()
        modules.append(Module(f"bundle {folder.name}: {ENTRY_MODULE}", text, entry=False, test=False))
    return modules


def all_modules(root: Path) -> list[Module]:
    return policy_modules(root) + template_modules(root) + entry_modules(root)
