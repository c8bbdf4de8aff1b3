"""Spec C for the Training Operator's v1 jobs: spec.runPolicy.managedBy takes only allowed values and never
changes. Same Rego as trainjob-managed-by (its template includes that rule's), with the v1 field and values."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.catalog.fixtures import V1_JOB_KINDS, v1_job
from kubeflow_trainer_policy.catalog.model import DataNeeds, MatchKind, Rule
from kubeflow_trainer_policy.catalog.rules.trainjob_managed_by import (
    ManagedBySettings,
    allowed_values_parameter,
    managed_by_cases,
)
from kubeflow_trainer_policy.profiles import PROFILES

V1_ALLOWED = ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]

V1_IMMUTABLE = "ManagedBy value is immutable"
"""The Training Operator's own detail: v1 jobs do not follow the Trainer's releases."""
SETTINGS = dict.fromkeys(PROFILES, ManagedBySettings(immutable_detail=V1_IMMUTABLE))


def _v1_job(kind: str, value: Any = None, null: bool = False) -> dict[str, Any]:
    return v1_job(kind, managed_by=value, explicit_null=null)


RULE = Rule(
    id="v1-job-managed-by",
    title="Training Operator v1 jobs: spec.runPolicy.managedBy takes an allowed value and never changes",
    description=(
        "spec.runPolicy.managedBy of PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob and JAXJob "
        "(kubeflow.org/v1), when set, must be one of the allowedValues (default: kubeflow.org/training-operator, "
        "kueue.x-k8s.io/multikueue), and it is immutable on UPDATE, including set -> unset and unset -> set. "
        "The specification gives the disallowed-value detail only for TrainJob; for v1 jobs this rule uses the "
        "analogous `ManagedBy must be <values joined by ' or '> if set`, built from the allowedValues "
        "parameter. v1 jobs are not defaulted upstream, and the policy never defaults."
    ),
    rationale=(
        "Same as for TrainJob: managedBy decides which controller reconciles the job (the Training Operator or "
        "MultiKueue); it must name a known controller and must not change while the job exists."
    ),
    spec_section="C",
    version="1.1.2",
    match=(MatchKind(("kubeflow.org",), V1_JOB_KINDS),),
    operations=("CREATE", "UPDATE"),
    parameters=(allowed_values_parameter(V1_ALLOWED),),
    data=DataNeeds(),
    libs=("violations", "review"),
    cases=lambda _p: managed_by_cases(V1_IMMUTABLE, "spec.runPolicy.managedBy", V1_ALLOWED, _v1_job, V1_JOB_KINDS),
    template_vars={
        "field": "spec.runPolicy.managedBy",
        "path": ["spec", "runPolicy", "managedBy"],
        "default_allowed": V1_ALLOWED,
    },
    settings=SETTINGS,
)
