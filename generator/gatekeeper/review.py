"""AdmissionReview (or a bare object, taken as CREATE) -> the AdmissionRequest Gatekeeper puts in input.review."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.errors import InputError
from generator.gatekeeper.documents import Document, dig, group_version_kind

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
ADMISSION_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")


@dataclass
class AdmissionRequest:
    """The request as Gatekeeper sees it; `as_input()` is `input.review`."""

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

    def with_namespace_object(self, namespace: dict[str, Any] | None) -> AdmissionRequest:
        if namespace is None:
            return self
        return AdmissionRequest({**self.body, "namespaceObject": namespace})

    def as_input(self) -> dict[str, Any]:
        return self.body


def audit_request(obj: dict[str, Any]) -> AdmissionRequest:
    """The review Gatekeeper's audit builds for a synced object: no operation, oldObject or userInfo."""
    group, version, kind = group_version_kind(obj)
    body: dict[str, Any] = {
        "kind": {"group": group, "version": version, "kind": kind},
        "name": dig(obj, "metadata", "name") or "",
        "object": obj,
    }
    namespace = dig(obj, "metadata", "namespace")
    if namespace:
        body["namespace"] = namespace
    return AdmissionRequest(body)


def request_from_document(doc: Document) -> AdmissionRequest:
    body = doc.body
    if body.get("kind") == "AdmissionReview":
        if body.get("apiVersion") not in ADMISSION_API_VERSIONS:
            raise InputError(doc.source, f"must be one of {', '.join(ADMISSION_API_VERSIONS)}", field="apiVersion")
        request = body.get("request")
        if not isinstance(request, dict):
            raise InputError(doc.source, "required: a mapping", field="request")
        return _complete(doc, dict(request), "request.")
    return _complete(doc, {"operation": "CREATE", "object": body}, "")


def _complete(doc: Document, request: dict[str, Any], prefix: str) -> AdmissionRequest:
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise InputError(doc.source, f"must be one of {', '.join(OPERATIONS)}", field=f"{prefix}operation")
    for key in ("object", "oldObject"):
        value = request.get(key)
        if value is not None and not isinstance(value, dict):
            raise InputError(doc.source, "must be a mapping (a Kubernetes object)", field=f"{prefix}{key}")
    if operation in ("CREATE", "UPDATE") and request.get("object") is None:
        raise InputError(doc.source, f"required for {operation}", field=f"{prefix}object")
    if operation == "UPDATE" and request.get("oldObject") is None:
        raise InputError(doc.source, "required for UPDATE", field=f"{prefix}oldObject")
    if operation == "DELETE":
        if request.get("oldObject") is None:
            raise InputError(doc.source, "required for DELETE", field=f"{prefix}oldObject")
        # Gatekeeper's webhook evaluates DELETE with object set to the object being deleted.
        request["object"] = request["oldObject"]
    subject = request.get("object") or request.get("oldObject") or {}
    group, version, kind = group_version_kind(subject)
    if not kind or not version:
        field = f"{prefix}{'object' if request.get('object') is not None else 'oldObject'}"
        raise InputError(doc.source, "must have apiVersion and kind", field=field)
    request.setdefault("kind", {"group": group, "version": version, "kind": kind})
    request.setdefault("name", dig(subject, "metadata", "name") or "")
    namespace = dig(subject, "metadata", "namespace")
    if namespace and not request.get("namespace"):
        request["namespace"] = namespace
    request.setdefault("uid", "")
    request.setdefault("userInfo", {"username": "trainer-policy-review"})
    request.setdefault("dryRun", False)
    return AdmissionRequest(request)
