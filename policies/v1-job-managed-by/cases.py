"""Spec C for the Training Operator's v1 jobs: spec.runPolicy.managedBy takes only allowed values and never
changes. The same checks as trainjob-managed-by (both use lib.trainer.managed_by), with the v1 field and values."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.catalog import cases_of
from kubeflow_trainer_policy.catalog.fixtures import V1_JOB_KINDS, v1_job
from kubeflow_trainer_policy.catalog.model import Case
from kubeflow_trainer_policy.profiles import Profile

managed_by_cases = cases_of("trainjob-managed-by").managed_by_cases

V1_ALLOWED = ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]

V1_IMMUTABLE = "ManagedBy value is immutable"
"""The Training Operator's own detail: v1 jobs do not follow the Trainer's releases."""


def _v1_job(kind: str, value: Any = None, null: bool = False) -> dict[str, Any]:
    return v1_job(kind, managed_by=value, explicit_null=null)


def cases(_p: Profile) -> list[Case]:
    return managed_by_cases(V1_IMMUTABLE, "spec.runPolicy.managedBy", V1_ALLOWED, _v1_job, V1_JOB_KINDS)
