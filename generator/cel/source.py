"""A rule's CEL source and its rendering for one profile.

The source is one YAML file per rule (`variables`, and `validations` or `violations` + `slots`), the same for every
profile: what a Trainer release does differently reaches the CEL as data, the variable `variables.settings` (the
rule's template_vars, its settings for the profile and the operations it judges there), prepended here.

A validation yields at most one message, so a rule whose number of violations is not fixed (one per replicated job,
say) computes the list of its messages in a variable and names it in `violations`; each of `slots` validations then
reports one entry of that list (the k-th fails when the list has more than k entries, with the k-th message). Beyond
`slots` messages the rest are not reported (the decision is the same: denied).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.paths import PROJECT_ROOT
from kubeflow_trainer_policy.profiles import Profile

DRAFTS = PROJECT_ROOT / "cel-drafts"
SETTINGS = "settings"
MIN_COMPATIBILITY = "1.30"
"""ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1 from Kubernetes 1.30."""
REGO_ONLY = "rego-only.yaml"


@dataclass(frozen=True)
class CelSource:
    rule_id: str
    path: Path
    variables: tuple[dict[str, str], ...]
    validations: tuple[dict[str, str], ...]
    violations: str = ""
    """The variable holding the list of violation messages ("" when the validations are written out)."""
    slots: int = 0
    compatibility: str = MIN_COMPATIBILITY
    """The oldest CEL compatibility version whose libraries the expressions use: an API server N accepts them in a
    new policy when this is at most its minimum compatibility version, N-1 (tests/cel/test_limits.py checks it)."""


def source_path(rule_id: str, folder: Path = DRAFTS) -> Path:
    return folder / f"{rule_id}.yaml"


def load_source(rule_id: str, folder: Path = DRAFTS) -> CelSource | None:
    """The rule's CEL source, or None when the rule has none (it stays Rego-only)."""
    path = source_path(rule_id, folder)
    if not path.is_file():
        return None
    body = yaml.safe_load(path.read_text())
    if not isinstance(body, dict):
        raise InputError(str(path), "must be a mapping")
    variables = tuple(_named(path, "variables", body.get("variables") or [], ("name", "expression")))
    validations = tuple(_named(path, "validations", body.get("validations") or [], ("expression",)))
    violations = body.get("violations") or ""
    slots = body.get("slots") or 0
    if violations and (not isinstance(slots, int) or slots < 1):
        raise InputError(str(path), "must be a positive number with `violations`", field="slots")
    if not validations and not violations:
        raise InputError(str(path), "required: validations, or violations and slots", field="validations")
    if any(v["name"] == SETTINGS for v in variables):
        raise InputError(str(path), f"{SETTINGS!r} is the profile's data, set by the renderer", field="variables")
    compatibility = body.get("compatibility", MIN_COMPATIBILITY)
    if not isinstance(compatibility, str) or not re.fullmatch(r"1\.[0-9]+", compatibility):
        raise InputError(str(path), "must be a Kubernetes minor version such as 1.30 (a string)", field="compatibility")
    return CelSource(rule_id, path, variables, validations, str(violations), slots, compatibility)


def rego_only(folder: Path = DRAFTS) -> dict[str, str]:
    """The rules without CEL, each with the reason it stays Rego-only."""
    path = folder / REGO_ONLY
    body = yaml.safe_load(path.read_text())
    if not isinstance(body, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in body.items()):
        raise InputError(str(path), "must map rule ids to the reason they stay Rego-only")
    return body


def _named(path: Path, key: str, items: Any, required: tuple[str, ...]) -> list[dict[str, str]]:
    if not isinstance(items, list):
        raise InputError(str(path), "must be a list", field=key)
    for i, item in enumerate(items):
        if not isinstance(item, dict) or any(not isinstance(item.get(k), str) for k in required):
            raise InputError(str(path), f"must be a mapping with {', '.join(required)}", field=f"{key}[{i}]")
    return items


def settings_of(rule: Rule, profile: Profile) -> dict[str, Any]:
    """The profile's data for the rule's CEL: template_vars, the rule's settings there, the operations it judges."""
    values: dict[str, Any] = dict(rule.template_vars)
    setting = rule.settings.get(profile.name)
    if setting is not None:
        values.update(dataclasses.asdict(setting) if dataclasses.is_dataclass(setting) else dict(setting))
    values["operations"] = list(rule.operations_in(profile))
    return values


def cel_literal(value: Any) -> str:
    """A CEL literal of a JSON value. Map values and the elements of mixed lists are wrapped in dyn(), as Kubernetes
    (1.29+) refuses aggregate literals whose elements differ in type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        items = [cel_literal(v) for v in value]
        if len({_cel_kind(v) for v in value}) > 1:
            items = [f"dyn({item})" for item in items]
        return "[" + ", ".join(items) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))}: dyn({cel_literal(v)})" for k, v in value.items()) + "}"
    raise TypeError(f"no CEL literal for {type(value).__name__}")


def _cel_kind(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "list:" + ",".join(sorted({_cel_kind(v) for v in value}))
    return type(value).__name__


def render(source: CelSource, rule: Rule, profile: Profile) -> dict[str, Any]:
    """The K8sNativeValidation `source` for the profile: the settings variable first, then the rule's."""
    variables = [{"name": SETTINGS, "expression": cel_literal(settings_of(rule, profile))}, *source.variables]
    validations = [dict(v) for v in source.validations]
    if source.violations:
        v = source.violations
        validations += [
            {"expression": f"size({v}) <= {k}", "messageExpression": f'size({v}) > {k} ? string({v}[{k}]) : ""'}
            for k in range(source.slots)
        ]
    return {"variables": [dict(v) for v in variables], "validations": validations}
