"""ConstraintTemplates (templates.gatekeeper.sh/v1), validated the way Gatekeeper validates them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.engine.rego_ast import ModuleFacts, RegoParser
from kubeflow_trainer_policy.errors import EngineError, InputError
from kubeflow_trainer_policy_provider.documents import dig
from kubeflow_trainer_policy_provider.reader import Document

TEMPLATE_API_VERSIONS = ("templates.gatekeeper.sh/v1", "templates.gatekeeper.sh/v1beta1")
ADMISSION_TARGET = "admission.k8s.gatekeeper.sh"
CEL_ENGINE = "K8sNativeValidation"
ALLOWED_DATA_ROOTS = ("data.inventory", "data.lib")


@dataclass(frozen=True)
class RegoModule:
    path: str
    source: str


@dataclass(frozen=True)
class ConstraintTemplate:
    name: str
    kind: str
    """The Constraint kind this template defines (spec.crd.spec.names.kind)."""
    package: str
    modules: tuple[RegoModule, ...]
    """The entry module first, then its libs."""
    parameters_schema: dict[str, Any] | None
    source: str
    annotations: dict[str, str]
    cel: dict[str, Any] | None = None
    """The whole template document when it has a K8sNativeValidation code entry (Gatekeeper 3.18+ evaluates that
    engine instead of the Rego), else None. tools/cel reads the entry from it as Gatekeeper's CEL driver does."""

    @property
    def violation_path(self) -> str:
        return f"{self.package}.violation"


def is_template(body: dict[str, Any]) -> bool:
    return body.get("kind") == "ConstraintTemplate" and body.get("apiVersion") in TEMPLATE_API_VERSIONS


def parse_template(doc: Document, parser: RegoParser) -> ConstraintTemplate:
    body = doc.body
    name = dig(body, "metadata", "name")
    if not isinstance(name, str) or not name:
        raise InputError(doc.source, "required", field="metadata.name")
    kind = dig(body, "spec", "crd", "spec", "names", "kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(doc.source, "required", field="spec.crd.spec.names.kind")
    if name != kind.lower():
        raise InputError(doc.source, f"must be the lower-cased kind {kind.lower()!r}", field="metadata.name")
    targets = dig(body, "spec", "targets")
    if not isinstance(targets, list) or len(targets) != 1 or not isinstance(targets[0], dict):
        raise InputError(doc.source, "must hold exactly one target", field="spec.targets")
    target = targets[0]
    if target.get("target") != ADMISSION_TARGET:
        raise InputError(doc.source, f"must be {ADMISSION_TARGET}", field="spec.targets[0].target")
    if target.get("rego"):
        raise InputError(
            doc.source,
            "legacy Rego v0 field is set; it takes precedence over code[] (use code[].source with version: v1)",
            field="spec.targets[0].rego",
        )
    entry, libs = _rego_source(doc, target)
    modules = [RegoModule(f"{name}/template.rego", entry)]
    modules += [RegoModule(f"{name}/lib{i}.rego", lib) for i, lib in enumerate(libs)]
    package = _check_modules(doc, name, modules, parser)
    schema = dig(body, "spec", "crd", "spec", "validation", "openAPIV3Schema")
    annotations = dig(body, "metadata", "annotations") or {}
    return ConstraintTemplate(
        name=name,
        kind=kind,
        package=package,
        modules=tuple(modules),
        parameters_schema=schema if isinstance(schema, dict) else None,
        source=doc.source,
        annotations=annotations if isinstance(annotations, dict) else {},
        cel=body if _has_cel(target) else None,
    )


def _has_cel(target: dict[str, Any]) -> bool:
    code = target.get("code")
    return isinstance(code, list) and any(isinstance(c, dict) and c.get("engine") == CEL_ENGINE for c in code)


def _rego_source(doc: Document, target: dict[str, Any]) -> tuple[str, list[str]]:
    code = target.get("code")
    if not isinstance(code, list):
        raise InputError(doc.source, "required: a list with a Rego engine entry", field="spec.targets[0].code")
    for i, entry in enumerate(code):
        if not isinstance(entry, dict) or entry.get("engine") != "Rego":
            continue
        field = f"spec.targets[0].code[{i}].source"
        source = entry.get("source")
        if not isinstance(source, dict):
            raise InputError(doc.source, "required: a mapping", field=field)
        if source.get("version") != "v1":
            raise InputError(
                doc.source,
                'must be "v1" (any other value is Rego v0, which this engine rejects)',
                field=f"{field}.version",
            )
        rego = source.get("rego")
        if not isinstance(rego, str) or not rego.strip():
            raise InputError(doc.source, "required: Rego source", field=f"{field}.rego")
        libs = source.get("libs") or []
        if not isinstance(libs, list) or not all(isinstance(lib, str) for lib in libs):
            raise InputError(doc.source, "must be a list of Rego sources", field=f"{field}.libs")
        return rego, libs
    raise InputError(doc.source, "has no entry with engine: Rego", field="spec.targets[0].code")


def _check_modules(doc: Document, name: str, modules: list[RegoModule], parser: RegoParser) -> str:
    """Gatekeeper's rewriter rules: libs under `lib.`, `violation` in the entry, data only via inventory/lib."""
    facts: list[ModuleFacts] = []
    for module in modules:
        try:
            facts.append(parser.parse(module.path, module.source))
        except EngineError as exc:
            raise InputError(doc.source, f"template {name}: Rego does not parse: {_first_line(exc)}") from exc
    entry, libs = facts[0], facts[1:]
    if "violation" not in entry.rule_names:
        raise InputError(doc.source, f"template {name}: the entry module defines no `violation` rule")
    if entry.package == "lib" or entry.package.startswith("lib."):
        raise InputError(doc.source, f"template {name}: the entry package must not be under `lib`")
    for lib in libs:
        if not lib.package.startswith("lib."):
            raise InputError(doc.source, f"template {name}: lib package {lib.package!r} must be under `lib.`")
    for module, fact in zip(modules, facts, strict=True):
        for ref in sorted(fact.data_refs):
            if not any(ref == root or ref.startswith(root + ".") for root in ALLOWED_DATA_ROOTS):
                raise InputError(
                    doc.source,
                    f"template {name}: {module.path}: invalid data reference: {ref!r} is not allowed "
                    "(only data.inventory and data.lib are)",
                )
    return entry.package


def _first_line(exc: Exception) -> str:
    text = str(exc)
    for line in text.splitlines():
        if "rego_" in line:
            return line.strip()
    return text.splitlines()[0] if text else "unknown error"
