"""A rule's CEL source and its rendering for one profile.

The source is the rule folder's `cel.yaml` (`settings`, `variables`, and `validations` or `violations` + `slots`), the
same for every profile: what a Trainer release does differently reaches the CEL as data, the variable
`variables.settings`, prepended here. Its values are read from the rule's own Rego, so the two engines share one
table: `settings` maps each name to a reference in the rule's package, evaluated by the embedded OPA with the
profile's lib (and no parameters); `operations` is what the rule's METADATA says it judges in the profile.

A validation yields at most one message, so a rule whose number of violations is not fixed (one per replicated job,
say) computes the list of its messages in a variable and names it in `violations`; each of `slots` validations then
reports one entry of that list (the k-th fails when the list has more than k entries, with the k-th message). Beyond
`slots` messages the rest are not reported (the decision is the same: denied).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.paths import POLICIES_DIR
from kubeflow_trainer_policy.profiles import Profile

SOURCE_FILE = "cel.yaml"
"""The rule folder's CEL (render/gatekeeper.py's ENGINE_FILES seam)."""
SETTINGS = "settings"
REF = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")
MIN_COMPATIBILITY = "1.30"
"""ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1 from Kubernetes 1.30."""
REGO_ONLY = POLICIES_DIR / "rego-only.yaml"


@dataclass(frozen=True)
class CelSource:
    rule_id: str
    path: Path
    settings: tuple[tuple[str, str], ...]
    """(name, Rego reference in the rule's package) of each value of `variables.settings`."""
    variables: tuple[dict[str, str], ...]
    validations: tuple[dict[str, str], ...]
    violations: str = ""
    """The variable holding the list of violation messages ("" when the validations are written out)."""
    slots: int = 0
    compatibility: str = MIN_COMPATIBILITY
    """The oldest CEL compatibility version whose libraries the expressions use: an API server N accepts them in a
    new policy when this is at most its minimum compatibility version, N-1 (tests/cel/test_limits.py checks it)."""


def load_source(rule: Rule) -> CelSource | None:
    """The rule's CEL source, or None when the rule has none (it stays Rego-only)."""
    path = rule.folder / SOURCE_FILE
    if not path.is_file():
        return None
    body = yaml.safe_load(path.read_text())
    if not isinstance(body, dict):
        raise InputError(str(path), "must be a mapping")
    settings = body.get(SETTINGS) or {}
    if not isinstance(settings, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and REF.fullmatch(v) for k, v in settings.items()
    ):
        raise InputError(
            str(path), "must map names to references in the rule's package (e.g. settings.check)", field=SETTINGS
        )
    if "operations" in settings:
        raise InputError(str(path), "operations come from the rule's METADATA", field=f"{SETTINGS}.operations")
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
    return CelSource(
        rule.id, path, tuple(settings.items()), variables, validations, str(violations), slots, compatibility
    )


def rego_only(path: Path = REGO_ONLY) -> dict[str, str]:
    """The rules without CEL, each with the reason it stays Rego-only."""
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


_SETTINGS: dict[tuple[str, str, str, str], dict[str, Any]] = {}


def settings_of(source: CelSource, rule: Rule, profile: Profile) -> dict[str, Any]:
    """The profile's data for the rule's CEL: each `settings` reference evaluated in the rule's Rego with the
    profile's lib and no parameters, and the operations the rule judges in the profile."""
    key = (rule.id, profile.name, rule.source, repr(source.settings))
    if key not in _SETTINGS:
        _SETTINGS[key] = {**_rego_values(source, rule, profile), "operations": list(rule.operations_in(profile))}
    return _SETTINGS[key]


def _rego_values(source: CelSource, rule: Rule, profile: Profile) -> dict[str, Any]:
    from kubeflow_trainer_policy.render.rego import shipped_libs  # render imports this module

    values: dict[str, Any] = {}
    with EmbeddedOpaEngine() as engine:
        engine.add_module(f"{rule.id}/src.rego", rule.source)
        for lib in shipped_libs(rule, profile):
            engine.add_module(f"lib/{lib.name}.rego", lib.source)
        for name, ref in source.settings:
            result = engine.eval_query(f"value := data.{rule.package}.{ref}", {"parameters": {}})
            if len(result.bindings) != 1:
                raise InputError(
                    str(source.path),
                    f"{ref} is undefined in {rule.package} (profile {profile.name})",
                    field=f"{SETTINGS}.{name}",
                )
            values[name] = result.bindings[0]["value"]
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
    variables = [{"name": SETTINGS, "expression": cel_literal(settings_of(source, rule, profile))}, *source.variables]
    validations = [dict(v) for v in source.validations]
    if source.violations:
        v = source.violations
        validations += [
            {"expression": f"size({v}) <= {k}", "messageExpression": f'size({v}) > {k} ? string({v}[{k}]) : ""'}
            for k in range(source.slots)
        ]
    return {"variables": [dict(v) for v in variables], "validations": validations}
