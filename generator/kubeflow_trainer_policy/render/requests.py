"""A catalog case as Gatekeeper sees it: input.review, data.inventory and the external_data answer.

Plain data only (generator/admission.py): the samples and Rego tests are not computed by the runner or
the provider they later test; the provider's answer value is written here from its documented contract.
"""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.admission import (
    admission_review_document,
    apiserver_request,
    audit_review,
    gatekeeper_review,
    inventory_document,
)
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"


def admission_review(case: Case) -> dict[str, Any]:
    """The case as the admission.k8s.io/v1 AdmissionReview an API server sends (not for AUDIT cases)."""
    return admission_review_document(apiserver_request(case.operation, case.object, case.old_object, uid=case.uid))


def review_input(case: Case) -> dict[str, Any]:
    """input.review for the case, as Gatekeeper builds it."""
    if case.operation == AUDIT:
        assert case.object is not None, case.name
        return audit_review(case.object)
    return gatekeeper_review(admission_review(case)["request"])


def parameters(rule: Rule, case: Case) -> dict[str, Any]:
    return rule.default_parameters() if case.parameters is None else case.parameters


def inventory(case: Case) -> dict[str, Any]:
    return inventory_document(case.cluster)


def trainjob_key(case: Case) -> str:
    """The key the external-data rule looks up for the case's request: <namespace>/<name>#<request uid>."""
    metadata = (case.object or case.old_object or {}).get("metadata") or {}
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}#{case.uid}"


def provider_value(jobset: dict[str, Any] | None) -> dict[str, Any]:
    """The provider's documented value for a JobSet (deploy/README.md): found, and the replicated jobs whose
    `active` is a positive integer, in status order."""
    if jobset is None:
        return {"found": False, "activeReplicatedJobs": []}
    statuses = (jobset.get("status") or {}).get("replicatedJobsStatus") or []
    active = [
        str(s.get("name", ""))
        for s in statuses
        if isinstance(s, dict) and type(s.get("active")) is int and s["active"] > 0
    ]
    return {"found": True, "activeReplicatedJobs": active}


def external_data_answer(case: Case, provider: str) -> dict[str, Any]:
    """The builtin's answer for the TrainJob's key: the case's literal one, or the provider's over `cluster`."""
    if case.external_data is not None:
        return case.external_data
    metadata = (case.object or case.old_object or {}).get("metadata") or {}
    jobset = next(
        (
            o
            for o in case.cluster
            if o.get("apiVersion") == JOBSET_API_VERSION
            and o.get("kind") == "JobSet"
            and (o.get("metadata") or {}).get("namespace") == metadata.get("namespace")
            and (o.get("metadata") or {}).get("name") == metadata.get("name")
        ),
        None,
    )
    return {
        "responses": [[trainjob_key(case), provider_value(jobset)]],
        "errors": [],
        "status_code": 200,
        "system_error": "",
    }


def suite_runnable(case: Case) -> bool:
    """Suites answer external data with the provider's real answer: a literal response has no suite form."""
    return case.external_data is None
