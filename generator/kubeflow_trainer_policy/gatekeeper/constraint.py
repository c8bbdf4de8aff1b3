"""Constraints (constraints.gatekeeper.sh): match, parameters and enforcementAction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.gatekeeper import schema_check
from kubeflow_trainer_policy.gatekeeper.template import ConstraintTemplate
from kubeflow_trainer_policy_provider.documents import dig
from kubeflow_trainer_policy_provider.reader import Document

CONSTRAINT_GROUP = "constraints.gatekeeper.sh"
ENFORCEMENT_ACTIONS = ("deny", "warn", "dryrun")


@dataclass(frozen=True)
class Constraint:
    kind: str
    name: str
    match: dict[str, Any]
    parameters: dict[str, Any]
    enforcement_action: str
    source: str
    labels: dict[str, str] = field(default_factory=dict)


def is_constraint(body: dict[str, Any]) -> bool:
    api_version = body.get("apiVersion")
    return isinstance(api_version, str) and api_version.startswith(CONSTRAINT_GROUP + "/")


def parse_constraint(doc: Document) -> Constraint:
    body = doc.body
    kind = body.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(doc.source, "required", field="kind")
    name = dig(body, "metadata", "name")
    if not isinstance(name, str) or not name:
        raise InputError(doc.source, "required", field="metadata.name")
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise InputError(doc.source, "must be a mapping", field="spec")
    match = spec.get("match") or {}
    if not isinstance(match, dict):
        raise InputError(doc.source, "must be a mapping", field="spec.match")
    parameters = spec.get("parameters")
    if parameters is None:
        parameters = {}
    action = spec.get("enforcementAction") or "deny"
    if action not in ENFORCEMENT_ACTIONS:
        raise InputError(
            doc.source,
            f"must be one of {', '.join(ENFORCEMENT_ACTIONS)}, got {action!r}",
            field="spec.enforcementAction",
        )
    labels = dig(body, "metadata", "labels") or {}
    return Constraint(kind, name, match, parameters, action, doc.source, labels if isinstance(labels, dict) else {})


def validate_parameters(constraint: Constraint, template: ConstraintTemplate) -> None:
    """Gatekeeper rejects a Constraint whose spec.parameters violate the template's schema."""
    if template.parameters_schema is None:
        return
    if schema_check.is_valid(template.parameters_schema, constraint.parameters):
        return  # the common case, decided without importing jsonschema (CLI start-up)
    import jsonschema  # the authority, and the wording of the error

    validator = jsonschema.Draft7Validator(template.parameters_schema)
    errors = sorted(validator.iter_errors(constraint.parameters), key=lambda e: list(e.absolute_path))
    if errors:
        error = errors[0]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise InputError(constraint.source, error.message, field=f"spec.parameters{path}")
