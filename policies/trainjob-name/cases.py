"""Spec E1 (research C1): a TrainJob's name is a DNS-1035 label (the webhook in v2.0, the CRD's CEL from v2.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile


@dataclass(frozen=True)
class NameSettings:
    check: Literal["webhook", "cel"]
    """`webhook` (v2.0: DNS-1035 details, CREATE) or `cel` (v2.1+: the CRD's two CEL messages)."""


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": NameSettings(check="webhook"),
    "v2.1": NameSettings(check="cel"),
    "v2.2": NameSettings(check="cel"),
    "v2.3": NameSettings(check="cel"),
}

DNS_1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
    "is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def cases(p: Profile) -> list[Case]:
    if RELEASES[p.name].check == "webhook":
        too_long = Expected("metadata.name", "Invalid", "must be no more than 63 characters")
        bad = Expected("metadata.name", "Invalid", DNS_1035)
    else:
        too_long = Expected("metadata.name", "Invalid", "metadata.name must be no more than 63 characters")
        bad = Expected("metadata.name", "Invalid", "metadata.name must match RFC 1035 DNS label format")
    suspended = {"suspend": True}
    return [
        Case("valid_name", "A DNS-1035 label.", trainjob(p, name="my-job-1"), cluster=_cluster()),
        Case("longest_name", "63 characters is the limit.", trainjob(p, name="a" * 63), cluster=_cluster()),
        Case(
            "name_too_long",
            "64 characters.",
            trainjob(p, name="a" * 64),
            cluster=_cluster(),
            expected=(too_long,),
        ),
        Case(
            "name_with_dot",
            "A dot (valid in a DNS-1123 subdomain, which the API server checks first) is not a DNS-1035 label.",
            trainjob(p, name="my.job"),
            cluster=_cluster(),
            expected=(bad,),
        ),
        Case(
            "name_starts_with_digit",
            "A DNS-1035 label starts with a letter.",
            trainjob(p, name="1job"),
            cluster=_cluster(),
            expected=(bad,),
        ),
        Case(
            "name_too_long_and_invalid",
            "Both errors at once.",
            trainjob(p, name="1" + "a" * 63),
            cluster=_cluster(),
            expected=(too_long, bad),
        ),
        Case(
            "update_checked_from_v2_1",
            "v2.0's webhook checks the name on CREATE only; the CEL rules of v2.1+ run on UPDATE too.",
            trainjob(p, name="1job", extra=suspended),
            operation="UPDATE",
            old_object=trainjob(p, name="1job", extra=suspended),
            cluster=_cluster(),
            expected=() if RELEASES[p.name].check == "webhook" else (bad,),
        ),
        Case(
            "audit_checked",
            "Audit reports stored TrainJobs with such names.",
            trainjob(p, name="1job"),
            operation=AUDIT,
            cluster=_cluster(),
            expected=(bad,),
        ),
        Case(
            "delete_not_checked",
            "DELETE is not checked.",
            None,
            operation="DELETE",
            old_object=trainjob(p, name="1job"),
        ),
    ]


def _cluster() -> tuple:
    """The runtime the TrainJobs reference, so that every other rule admits them."""
    return (runtime(),)
