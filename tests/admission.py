"""AdmissionReview documents as the API server sends them to Gatekeeper's webhook."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.admission import admission_review_document, apiserver_request

TEST_UID = "3b7c1d9e-0000-4000-8000-000000000001"


def admission_review(
    operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None, uid: str = TEST_UID
) -> dict[str, Any]:
    return admission_review_document(apiserver_request(operation, obj, old, uid=uid))
