"""Admission documents read from files -> the `input.review` Gatekeeper builds (admission.py).

Gatekeeper decodes the AdmissionRequest into its Go type and serialises it again, so the review
always has the keys that type never omits (`uid`, `kind`, `resource`, `operation`, `userInfo`,
`object`, `oldObject`, `options`), with empty values when unknown, and keeps the optional ones
(`name`, `namespace`, `dryRun`, `subResource`, `requestKind`, ...) only when set. Unknown keys are
dropped. The webhook evaluates DELETE with `object` = `oldObject`. Audit, and gator's bare objects,
review a stored object with `operation: ""`. Recorded from real Gatekeeper in
tests/gatekeeper/conformance/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.admission import (
    ADMISSION_REVIEW,
    apiserver_request,
    audit_review,
    gatekeeper_review,
)
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider.documents import group_version_kind
from kubeflow_trainer_policy_provider.reader import Document

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
ADMISSION_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")


@dataclass
class AdmissionRequest:
    """The review as Gatekeeper sees it; `as_input()` is `input.review`."""

    body: dict[str, Any]

    @property
    def operation(self) -> str:
        return self.body.get("operation", "")

    @property
    def object(self) -> dict[str, Any] | None:
        return self.body.get("object")

    @property
    def old_object(self) -> dict[str, Any] | None:
        return self.body.get("oldObject")

    @property
    def namespace(self) -> str:
        return self.body.get("namespace") or ""

    def as_input(self) -> dict[str, Any]:
        return self.body


def audit_request(obj: dict[str, Any]) -> AdmissionRequest:
    """The review Gatekeeper's audit (and gator, for a bare object) builds for a stored object."""
    return AdmissionRequest(audit_review(obj))


def create_request(obj: dict[str, Any], source: str) -> AdmissionRequest:
    """The CREATE request the API server would send for `obj` (what `review` assumes for a bare object)."""
    _, version, kind = group_version_kind(obj)
    if not kind or not version:
        raise InputError(source, "must have apiVersion and kind", field="object")
    return AdmissionRequest(gatekeeper_review(apiserver_request("CREATE", obj)))


def is_admission_review(body: dict[str, Any]) -> bool:
    """An AdmissionReview, or something that tries to be one (wrong kind or apiVersion)."""
    api_version = body.get("apiVersion")
    return (
        body.get("kind") == ADMISSION_REVIEW
        or (isinstance(api_version, str) and api_version.startswith("admission.k8s.io/"))
        or ("request" in body and "metadata" not in body)
    )


def request_from_document(doc: Document) -> AdmissionRequest:
    """An AdmissionReview's request as Gatekeeper's webhook sees it, or a bare object taken as CREATE."""
    body = doc.body
    if not is_admission_review(body):
        return create_request(body, doc.source)
    if body.get("kind") != ADMISSION_REVIEW:
        raise InputError(doc.source, f"must be {ADMISSION_REVIEW} for an admission review", field="kind")
    if body.get("apiVersion") not in ADMISSION_API_VERSIONS:
        raise InputError(doc.source, f"must be one of {', '.join(ADMISSION_API_VERSIONS)}", field="apiVersion")
    request = body.get("request")
    if not isinstance(request, dict):
        raise InputError(doc.source, "required: a mapping", field="request")
    _validate(doc, request)
    return AdmissionRequest(gatekeeper_review(request))


def _validate(doc: Document, request: dict[str, Any]) -> None:
    """What every request from an API server has: a known operation and the objects it implies."""
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise InputError(doc.source, f"must be one of {', '.join(OPERATIONS)}", field="request.operation")
    for key in ("object", "oldObject"):
        value = request.get(key)
        if value is not None and not isinstance(value, dict):
            raise InputError(doc.source, "must be a mapping (a Kubernetes object)", field=f"request.{key}")
    if operation in ("CREATE", "UPDATE") and request.get("object") is None:
        raise InputError(doc.source, f"required for {operation}", field="request.object")
    if operation in ("UPDATE", "DELETE") and request.get("oldObject") is None:
        raise InputError(doc.source, f"required for {operation}", field="request.oldObject")
    if request.get("kind") is not None and not isinstance(request.get("kind"), dict):
        raise InputError(doc.source, "must be a mapping {group, version, kind}", field="request.kind")


def gator_request(doc: Document) -> AdmissionRequest:
    """A gator suite case: an AdmissionReview is an admission request, a bare object is reviewed as audit."""
    if is_admission_review(doc.body):
        return request_from_document(doc)
    return audit_request(doc.body)
