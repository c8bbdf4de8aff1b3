"""The rule catalog's data model: a rule is its Rego (with metadata) and a table of cases."""

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


@dataclass(frozen=True)
class Rule:
    """A rule as its folder policies/<id>/ defines it: src.rego (the Rego, with the rule's metadata in its
    package METADATA) and cases.py (its table of cases)."""

    id: str
    """kebab-case, the folder's name; the Constraint kind and template name derive from it."""
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
    cases: Callable[[Profile], list[Case]]
    package: str
    """The Rego package of src.rego (the template name, which Gatekeeper requires of a template's rego)."""
    source: str
    """src.rego as written: the rego of every profile's ConstraintTemplate."""
    folder: Path
    operations_by_profile: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Profile name -> the requests the rule judges in that Trainer release, where they are fewer."""
    alternative_to: str = ""
    """The id of the rule this one replaces in the bundle's external-data variant ("" for none)."""
    enforcement_action: str = "deny"
    """The default Constraint's enforcementAction: `deny`, or `warn` for rules that mirror upstream warnings."""

    @property
    def kind(self) -> str:
        """The Constraint kind (CamelCase); the template name is its lower-case form."""
        return kind_for(self.id)

    @property
    def template_name(self) -> str:
        return self.kind.lower()

    def operations_in(self, profile: Profile) -> tuple[str, ...]:
        """The requests the rule judges in `profile`."""
        return self.operations_by_profile.get(profile.name, self.operations)

    def default_parameters(self) -> dict[str, Json]:
        return {p.name: p.default for p in self.parameters if p.default is not None}

    def parameters_schema(self) -> dict[str, Json]:
        return {
            "type": "object",
            "properties": {p.name: {**p.schema, "description": p.description} for p in self.parameters},
        }
