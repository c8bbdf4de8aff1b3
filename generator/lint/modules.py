"""Every emitted Rego module (policies/<profile>/**, and the rego and libs of every ConstraintTemplate under
bundles/gatekeeper/), grouped the way OPA loads them, and the checks that run on them with the real OPA."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import EngineError

ALLOWED_DATA = ("data.inventory", "data.lib")
"""Gatekeeper's rewriter refuses any other `data` reference in a template."""
PROBE = "package probe\n\nx := rego.metadata.chain()\n"
"""A module calling rego.metadata.chain() makes OPA parse every loaded module's METADATA as YAML."""


@dataclass(frozen=True)
class Module:
    path: str
    """Where it lives: a file, or `<template.yaml>#rego` / `<template.yaml>#libs[i]`."""
    text: str
    entry: bool
    test: bool


@dataclass(frozen=True)
class LoadGroup:
    """Modules OPA loads together: one policies/<profile>/ folder, or one template's rego and libs."""

    name: str
    modules: tuple[Module, ...]


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


def load_groups(root: Path) -> list[LoadGroup]:
    groups = []
    policies = root / "policies"
    for profile in sorted(p for p in policies.glob("*") if p.is_dir()):
        modules = tuple(
            Module(
                path.relative_to(root).as_posix(),
                path.read_text(encoding="utf-8"),
                entry=path.name == "src.rego",
                test=path.name.endswith("_test.rego"),
            )
            for path in sorted(profile.rglob("*.rego"))
        )
        groups.append(LoadGroup(profile.relative_to(root).as_posix(), modules))
    for template in sorted((root / "bundles" / "gatekeeper").rglob("template.yaml")):
        rel = template.relative_to(root).as_posix()
        source = yaml.safe_load(template.read_text(encoding="utf-8"))["spec"]["targets"][0]["code"][0]["source"]
        modules = [Module(f"{rel}#rego", source["rego"], entry=True, test=False)]
        modules += [Module(f"{rel}#libs[{i}]", lib, entry=False, test=False) for i, lib in enumerate(source["libs"])]
        groups.append(LoadGroup(rel, tuple(modules)))
    return groups


def _external_data(_request: object) -> dict[str, object]:
    return {"responses": [], "errors": [], "status_code": 200, "system_error": ""}


def annotation_errors(group: LoadGroup) -> list[str]:
    """OPA's errors when it loads the group with annotation processing on (METADATA that is not valid YAML)."""
    with EmbeddedOpaEngine() as engine:
        engine.register_builtin("external_data", _external_data, arity=1)
        try:
            for module in group.modules:
                engine.add_module(module.path, module.text)
            engine.add_module("probe.rego", PROBE)
            engine.eval_query("x := data.probe.x")
        except EngineError as exc:
            return [f"{group.name}: {' '.join(str(exc).split())}"]
    return []


def data_ref_errors(modules: list[Module], parser: RegoParser) -> list[str]:
    errors = []
    for module in modules:
        if module.test:
            continue
        facts = parser.parse(module.path, module.text)
        errors += [
            f"{module.path}: {ref} (a template may read only data.inventory and data.lib.*)"
            for ref in sorted(facts.data_refs)
            if not ref.startswith(ALLOWED_DATA)
        ]
    return errors
