"""Builders for AdmissionReviews and TrainJobs used by the runner's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy_provider.reader import Document
from tests.admission import admission_review

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def trainjob(name: str = "job1", namespace: str = "team-a", labels: dict[str, str] | None = None, **spec: Any) -> dict:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": metadata, "spec": spec}


def request(operation: str, obj: dict | None, old: dict | None = None) -> AdmissionRequest:
    return request_from_document(Document("test", admission_review(operation, obj, old)))
