"""Spec C: a TrainJob's spec.managedBy takes only allowed values and never changes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.catalog.fixtures import trainjob
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import with_runtime
from kubeflow_trainer_policy.profiles import Profile

TRAINJOB_ALLOWED = ["trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"]
SITE = "example.com/site-controller"


@dataclass(frozen=True)
class ManagedBySettings:
    immutable_detail: str
    """The immutability detail: the webhook's text until v2.1, the CRD's CEL `field is immutable` from v2.2."""


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": ManagedBySettings(immutable_detail="ManagedBy value is immutable"),
    "v2.1": ManagedBySettings(immutable_detail="ManagedBy value is immutable"),
    "v2.2": ManagedBySettings(immutable_detail="field is immutable"),
    "v2.3": ManagedBySettings(immutable_detail="field is immutable"),
}


def _invalid_value(allowed: list[str]) -> str:
    return f"ManagedBy must be {' or '.join(allowed)} if set"


def managed_by_cases(
    immutable_detail: str,
    field: str,
    allowed: list[str],
    make: Callable[..., dict[str, Any]],
    kinds: tuple[str, ...],
) -> list[Case]:
    invalid = Expected(field, "Invalid", _invalid_value(allowed))
    immutable = Expected(field, "Invalid", immutable_detail)
    first, second = allowed
    cases = [
        Case("create_unset_allowed", "Unset: allowed (the policies never default).", make(kinds[0])),
        Case("create_explicit_null_allowed", "null is unset.", make(kinds[0], null=True)),
        Case(
            "create_disallowed_value",
            "A value outside the list: Invalid.",
            make(kinds[0], value="example.com/other"),
            expected=(invalid,),
        ),
        Case(
            "create_empty_string_is_set",
            "An empty string is a set value outside the list.",
            make(kinds[0], value=""),
            expected=(invalid,),
        ),
        Case(
            "create_wrong_type", "A non-string value is outside the list.", make(kinds[0], value=5), expected=(invalid,)
        ),
        Case(
            "update_unchanged_allowed",
            "Unchanged on UPDATE: allowed.",
            make(kinds[0], value=second),
            operation="UPDATE",
            old_object=make(kinds[0], value=second),
        ),
        Case(
            "update_value_change_immutable",
            "Changing the value: Invalid, immutable.",
            make(kinds[0], value=second),
            operation="UPDATE",
            old_object=make(kinds[0], value=first),
            expected=(immutable,),
        ),
        Case(
            "update_set_to_unset_immutable",
            "set -> unset is a change.",
            make(kinds[0]),
            operation="UPDATE",
            old_object=make(kinds[0], value=second),
            expected=(immutable,),
        ),
        Case(
            "update_unset_to_set_immutable",
            "unset -> set is a change.",
            make(kinds[0], value=second),
            operation="UPDATE",
            old_object=make(kinds[0]),
            expected=(immutable,),
        ),
        Case(
            "update_null_to_absent_unchanged",
            "null and absent are both unset.",
            make(kinds[0]),
            operation="UPDATE",
            old_object=make(kinds[0], null=True),
        ),
        Case(
            "update_to_disallowed_value",
            "Changing to a disallowed value: both violations.",
            make(kinds[0], value="example.com/other"),
            operation="UPDATE",
            old_object=make(kinds[0], value=first),
            expected=(invalid, immutable),
        ),
        Case(
            "site_parameter_allows_own_controller",
            "allowedValues adds a site's controller.",
            make(kinds[0], value=SITE),
            parameters={"allowedValues": [*allowed, SITE]},
        ),
        Case(
            "site_parameter_message_lists_values",
            "The detail lists the parameter's values.",
            make(kinds[0], value="example.com/other"),
            parameters={"allowedValues": [*allowed, SITE]},
            expected=(Expected(field, "Invalid", _invalid_value([*allowed, SITE])),),
        ),
        Case(
            "parameters_omitted_use_defaults",
            "A Constraint without parameters uses the default list.",
            make(kinds[0], value="example.com/other"),
            parameters={},
            expected=(invalid,),
        ),
        Case(
            "audit_checks_value_only",
            "Audit checks the value; no transition without oldObject.",
            make(kinds[0], value="example.com/other"),
            operation=AUDIT,
            expected=(invalid,),
        ),
        Case(
            "delete_is_not_checked",
            "DELETE carries no object: nothing to check.",
            None,
            operation="DELETE",
            old_object=make(kinds[0], value="example.com/other"),
        ),
    ]
    for kind in kinds[1:]:
        cases.append(
            Case(
                f"create_disallowed_{kind.lower()}",
                f"{kind} is checked too.",
                make(kind, value="example.com/other"),
                expected=(invalid,),
            )
        )
        cases.append(Case(f"create_allowed_{kind.lower()}", f"{kind} with an allowed value.", make(kind, value=second)))
    return cases


def _trainjob_for(p: Profile) -> Callable[..., dict[str, Any]]:
    def make(_kind: str, value: Any = None, null: bool = False) -> dict[str, Any]:
        return trainjob(p, managed_by=value, unset=("managedBy",) if null else ())

    return make


def cases(p: Profile) -> list[Case]:
    return with_runtime(
        managed_by_cases(
            RELEASES[p.name].immutable_detail, "spec.managedBy", TRAINJOB_ALLOWED, _trainjob_for(p), ("TrainJob",)
        )
    )
