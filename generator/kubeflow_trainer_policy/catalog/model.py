"""The rule catalog's data model: a rule is metadata + a Rego template + a table of cases."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.profiles import Profile

Json = Any
AUDIT = "AUDIT"
"""Pseudo-operation of a case evaluated as Gatekeeper's audit does: no operation, no oldObject."""


@dataclass(frozen=True)
class Parameter:
    name: str
    schema: dict[str, Json]
    """openAPIV3Schema of the parameter (structural: a `type` at every level)."""
    default: Json
    """None: the parameter is left out of the default Constraint (e.g. an optional limit)."""
    description: str


@dataclass(frozen=True)
class MatchKind:
    api_groups: tuple[str, ...]
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class SyncKind:
    group: str
    version: str
    kind: str


@dataclass(frozen=True)
class DataNeeds:
    """What a rule reads besides the request: synced kinds (data.inventory) and external data providers."""

    inventory: tuple[SyncKind, ...] = ()
    external_data_providers: tuple[str, ...] = ()
    """Default names of the Provider objects the rule calls (the name itself is usually a parameter)."""


@dataclass(frozen=True)
class Expected:
    """One violation, in Kubernetes field.Error terms."""

    field: str
    type: str
    detail: str

    @property
    def msg(self) -> str:
        return f"{self.field}: {self.type}: {self.detail}"


@dataclass(frozen=True)
class Case:
    name: str
    """snake_case; becomes `test_<name>` in Rego and the sample's file name."""
    description: str
    object: dict[str, Json] | None
    operation: str = "CREATE"
    """CREATE, UPDATE, DELETE or AUDIT (no operation and no oldObject)."""
    old_object: dict[str, Json] | None = None
    cluster: tuple[dict[str, Json], ...] = ()
    """Cluster objects: JobSets etc. They fill data.inventory and back the provider."""
    parameters: dict[str, Json] | None = None
    """Constraint parameters; None = the rule's defaults (the default Constraint)."""
    external_data: dict[str, Json] | None = None
    """A literal external_data response (e.g. a provider failure); None = computed from `cluster`."""
    expected: tuple[Expected, ...] = ()
    also_in_bundle: tuple[tuple[str, Expected], ...] = ()
    """(rule id, violation) that other rules of the same install report for this object: a review of the whole
    bundle expects them too; the rule's own suite and Rego tests never see them."""

    @property
    def allowed(self) -> bool:
        return not self.expected

    @property
    def uid(self) -> str:
        return case_uid(self.name)


def case_uid(name: str) -> str:
    """The admission request uid of a case: stable, so generated files do not drift."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trainer-policy/{name}"))


KIND_WORDS = {"trainjob": "TrainJob", "ml": "ML"}
"""Words of a rule id whose CamelCase is not just capitalised."""


def kind_for(rule_id: str) -> str:
    """The Constraint kind of a rule id: `Trainer` + the id in CamelCase (trainjob-ml-policy ->
    TrainerTrainJobMLPolicy)."""
    return "Trainer" + "".join(KIND_WORDS.get(word, word.capitalize()) for word in rule_id.split("-"))


def folder_for(rule_id: str) -> str:
    """The rule's folder (and Python package) under generator/catalog/rules/."""
    return rule_id.replace("-", "_")


@dataclass(frozen=True)
class Rule:
    id: str
    """kebab-case; the Constraint kind, template, package and folder names all derive from it."""
    title: str
    description: str
    rationale: str
    spec_section: str
    version: str
    """metadata.gatekeeper.sh/version of the template (semver)."""
    match: tuple[MatchKind, ...]
    operations: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    data: DataNeeds
    libs: tuple[str, ...]
    """Lib modules (names under generator/catalog/templates/lib/, without .rego) the template imports."""
    cases: Callable[[Profile], list[Case]]
    template_vars: dict[str, Json] = field(default_factory=dict)
    alternative_to: str = ""
    """The id of the rule this one replaces in the bundle's external-data variant ("" for none)."""
    enforcement_action: str = "deny"
    """The default Constraint's enforcementAction: `deny`, or `warn` for rules that mirror upstream warnings."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Profile name -> what this rule does differently in that Trainer release (the template's `settings`);
    empty when the rule needs no switch of its own. Every profile must have an entry when it is not empty."""

    folder: Path | None = field(default=None, compare=False, repr=False)
    """The rule's folder (metadata, cases, template.rego.j2); set when the catalog loads it."""

    @property
    def kind(self) -> str:
        """The Constraint kind (CamelCase); the template name is its lower-case form."""
        return kind_for(self.id)

    @property
    def template_name(self) -> str:
        return self.kind.lower()

    @property
    def package(self) -> str:
        return self.template_name

    def operations_in(self, profile: Profile) -> tuple[str, ...]:
        """The requests the rule judges in `profile`: `operations`, unless the rule's settings for that release
        narrow them (an `operations` attribute, e.g. v2.0's name webhook judges CREATE only)."""
        narrowed = getattr(self.settings.get(profile.name), "operations", None)
        return tuple(narrowed) if narrowed else self.operations

    def rego_operations(self, profile: Profile) -> str:
        """`operations_in(profile)` as a Rego set literal, for `review.applies_to(...)` in templates."""
        return "{" + ", ".join(f'"{op}"' for op in self.operations_in(profile)) + "}"

    def default_parameters(self) -> dict[str, Json]:
        return {p.name: p.default for p in self.parameters if p.default is not None}

    def parameters_schema(self) -> dict[str, Json]:
        return {
            "type": "object",
            "properties": {p.name: {**p.schema, "description": p.description} for p in self.parameters},
        }
