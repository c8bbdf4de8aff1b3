"""AdmissionReview documents as the API server sends them to Gatekeeper's webhook."""

from __future__ import annotations

from typing import Any


def admission_review(operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "3b7c1d9e-0000-4000-8000-000000000001", "operation": operation}
    if obj is not None:
        request["object"] = obj
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
