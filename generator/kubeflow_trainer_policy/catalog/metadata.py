"""A rule's metadata is the METADATA of its src.rego's package, read as OPA reads it: the modules load into the
embedded OPA, which parses every annotation (and refuses a block that is not valid YAML), and
`rego.metadata.chain()` hands back what it parsed."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.catalog.model import DataNeeds, MatchKind, Parameter, SyncKind
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.errors import EngineError

PROBE_RULE = "trainer_policy_metadata"
SEMVER = re.compile(r"\d+\.\d+\.\d+")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
ACTIONS = ("deny", "warn", "dryrun")


class MetadataError(ValueError):
    """A METADATA block that lacks a field the catalog needs, or holds one of the wrong shape."""

    def __init__(self, source: str, field: str, message: str):
        self.source, self.field = source, field
        super().__init__(f"{source}: METADATA {field}: {message}")


def read_annotations(modules: Mapping[str, str], packages: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The package annotations of each of `packages` (file -> package), with every module of `modules` (file ->
    source) loaded, so the rules compile as they do in a template."""
    with EmbeddedOpaEngine() as engine:
        # A module calling Gatekeeper's builtin compiles only where the builtin exists; it is never called here.
        engine.register_builtin("external_data", lambda _request: None, arity=1)
        for path, source in modules.items():
            engine.add_module(path, source)
        names = sorted(set(packages.values()))
        for i, package in enumerate(names):
            engine.add_module(
                f"metadata-probe-{i}.rego", f"package {package}\n\n{PROBE_RULE} := rego.metadata.chain()\n"
            )
        query = "; ".join(f"r{i} := data.{package}.{PROBE_RULE}" for i, package in enumerate(names))
        try:
            result = engine.eval_query(query)
        except EngineError as exc:
            raise EngineError(f"the policies do not compile: {' '.join(str(exc).split())}") from exc
        bindings = result.bindings[0] if result.bindings else {}
    found: dict[str, dict[str, Any]] = {}
    for i, package in enumerate(names):
        chain = bindings.get(f"r{i}") or []
        scoped = [link.get("annotations") for link in chain if link.get("path") == ["data", *package.split(".")][1:]]
        found[package] = next((a for a in scoped if a and a.get("scope") == "package"), {})
    return {path: found[package] for path, package in packages.items()}


def _get(
    block: Mapping[str, Any], source: str, field: str, kind: type | tuple[type, ...], required: bool = True
) -> Any:
    value = block.get(field.rpartition(".")[2])
    if value is None:
        if required:
            raise MetadataError(source, field, "required")
        return None
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise MetadataError(source, field, f"must be a {names}, got {json.dumps(value)[:80]}")
    return value


def _strings(value: Any, source: str, field: str, allowed: tuple[str, ...] = ()) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise MetadataError(source, field, "must be a non-empty list of strings")
    wrong = [v for v in value if allowed and v not in allowed]
    if wrong:
        raise MetadataError(source, field, f"{wrong[0]!r} is not one of {', '.join(allowed)}")
    return tuple(value)


@dataclass(frozen=True)
class RuleMetadata:
    """What a rule's METADATA says, checked: everything of a Rule but its Rego, cases and folder."""

    id: str
    title: str
    description: str
    rationale: str
    spec_section: str
    version: str
    match: tuple[MatchKind, ...]
    operations: tuple[str, ...]
    operations_by_profile: dict[str, tuple[str, ...]]
    parameters: tuple[Parameter, ...]
    data: DataNeeds
    enforcement_action: str
    alternative_to: str


def parse_metadata(annotations: Mapping[str, Any], source: str) -> RuleMetadata:
    """The rule's metadata from its package annotations (title, description, and the rest under custom)."""
    if not annotations:
        raise MetadataError(source, "(package)", "the package needs a METADATA block")
    custom = _get(annotations, source, "custom", dict)
    version = _get(custom, source, "custom.version", str)
    if not SEMVER.fullmatch(version):
        raise MetadataError(source, "custom.version", f"must be a semantic version like 1.0.0, got {version!r}")
    match = []
    for i, entry in enumerate(_get(custom, source, "custom.match", list)):
        where = f"custom.match[{i}]"
        if not isinstance(entry, dict):
            raise MetadataError(source, where, "must be a mapping of apiGroups and kinds")
        groups = entry.get("apiGroups")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise MetadataError(source, f"{where}.apiGroups", "must be a list of strings")
        match.append(MatchKind(tuple(groups), _strings(entry.get("kinds"), source, f"{where}.kinds")))
    by_profile = _get(custom, source, "custom.operationsByProfile", dict, required=False) or {}
    action = _get(custom, source, "custom.enforcementAction", str, required=False) or "deny"
    if action not in ACTIONS:
        raise MetadataError(source, "custom.enforcementAction", f"must be one of {', '.join(ACTIONS)}")
    return RuleMetadata(
        id=_get(custom, source, "custom.id", str),
        title=_get(annotations, source, "title", str),
        description=" ".join(_get(annotations, source, "description", str).split()),
        rationale=" ".join(_get(custom, source, "custom.rationale", str).split()),
        spec_section=str(_get(custom, source, "custom.specSection", (str, int, float))),
        version=version,
        match=tuple(match),
        operations=_strings(custom.get("operations"), source, "custom.operations", OPERATIONS),
        operations_by_profile={
            name: _strings(ops, source, f"custom.operationsByProfile.{name}", OPERATIONS)
            for name, ops in by_profile.items()
        },
        parameters=tuple(_parameters(custom, source)),
        data=_data(custom, source),
        enforcement_action=action,
        alternative_to=_get(custom, source, "custom.alternativeTo", str, required=False) or "",
    )


def _parameters(custom: Mapping[str, Any], source: str) -> list[Parameter]:
    parameters = []
    for i, entry in enumerate(_get(custom, source, "custom.parameters", list, required=False) or []):
        where = f"custom.parameters[{i}]"
        if not isinstance(entry, dict):
            raise MetadataError(source, where, "must be a mapping of name, description, schema and default")
        schema = _get(entry, source, f"{where}.schema", dict)
        if "type" not in schema and "x-kubernetes-int-or-string" not in schema:
            raise MetadataError(source, f"{where}.schema", "must be a structural schema (a type at its top)")
        parameters.append(
            Parameter(
                name=_get(entry, source, f"{where}.name", str),
                schema=schema,
                default=entry.get("default"),
                description=" ".join(_get(entry, source, f"{where}.description", str).split()),
            )
        )
    return parameters


def _data(custom: Mapping[str, Any], source: str) -> DataNeeds:
    kinds = []
    for i, entry in enumerate(_get(custom, source, "custom.inventory", list, required=False) or []):
        where = f"custom.inventory[{i}]"
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("group", "version", "kind")):
            raise MetadataError(source, where, "must be a mapping of group, version and kind (strings)")
        kinds.append(SyncKind(entry["group"], entry["version"], entry["kind"]))
    providers = custom.get("externalDataProviders")
    return DataNeeds(
        inventory=tuple(kinds),
        external_data_providers=()
        if providers is None
        else _strings(providers, source, "custom.externalDataProviders"),
    )
