"""v2.3's CRD CEL rule on the initializers' storageUri (pkg/apis/trainer/v1alpha1/trainjob_types.go)."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import default_runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile

CHECKED = {"v2.0": False, "v2.1": False, "v2.2": False, "v2.3": True}
"""The releases whose TrainJob CRD carries the rule (src.rego keeps the Rego's own table)."""

DETAIL = "storageUri may be empty, or it must be a valid URI (scheme://...)"
IMMUTABLE_FIELDS = "trainjob-immutable-fields"


def _tj(p: Profile, dataset: str | None = None, model: str | None = None) -> dict[str, Any]:
    initializer: dict[str, Any] = {}
    if dataset is not None:
        initializer["dataset"] = {"storageUri": dataset}
    if model is not None:
        initializer["model"] = {"storageUri": model}
    return trainjob(p, initializer=initializer)


def cases(p: Profile) -> list[Case]:
    cluster = (default_runtime(),)

    def invalid(*initializers: str) -> tuple[Expected, ...]:
        if not CHECKED[p.name]:
            return ()
        return tuple(Expected(f"spec.initializer.{i}.storageUri", "Invalid", DETAIL) for i in initializers)

    # v2.2+ make spec.initializer immutable: a changed storageUri is that rule's violation too.
    initializer_immutable = (
        ((IMMUTABLE_FIELDS, Expected("spec.initializer", "Invalid", "field is immutable")),)
        if p.name in ("v2.2", "v2.3")
        else ()
    )
    return [
        Case(
            "uris_with_a_scheme",
            "hf://, s3:// and pvc:// URIs (the shipped initializers' schemes).",
            _tj(p, "hf://tatsu-lab/alpaca", "s3://bucket/models/llama"),
            cluster=cluster,
        ),
        Case("empty_uri", "The rule allows the empty string.", _tj(p, "", ""), cluster=cluster),
        Case(
            "dataset_uri_without_scheme",
            "v2.3: a path without a scheme is Invalid at the field, with the CRD rule's message.",
            _tj(p, "bucket/dataset"),
            cluster=cluster,
            expected=invalid("dataset"),
        ),
        Case(
            "both_uris_invalid",
            "v2.3: one Invalid per initializer; a scheme must start with a letter and `://` needs something after it.",
            _tj(p, "1s3://bucket", "hf://"),
            cluster=cluster,
            expected=invalid("dataset", "model"),
        ),
        Case(
            "single_slash_is_not_a_uri",
            "v2.3: `hf:/model` lacks the double slash.",
            _tj(p, model="hf:/model"),
            cluster=cluster,
            expected=invalid("model"),
        ),
        Case(
            "audit_reports_stored_invalid_uri",
            "Audit reports a stored TrainJob created before the CRD carried the rule.",
            _tj(p, "bucket/dataset"),
            operation=AUDIT,
            cluster=cluster,
            expected=invalid("dataset"),
        ),
        Case(
            "update_unchanged_invalid_uri_ratcheted",
            "An UPDATE that keeps an invalid value: the API server's validation ratcheting lets it pass.",
            {**_tj(p, "bucket/dataset"), "metadata": {"name": "job", "namespace": "team-a", "labels": {"a": "b"}}},
            operation="UPDATE",
            old_object=_tj(p, "bucket/dataset"),
            cluster=cluster,
        ),
        Case(
            "update_to_invalid_uri",
            "v2.3: an UPDATE that changes storageUri to a value without a scheme (spec.initializer is immutable too).",
            _tj(p, "bucket/other"),
            operation="UPDATE",
            old_object=_tj(p, "hf://tatsu-lab/alpaca"),
            cluster=cluster,
            expected=invalid("dataset"),
            also_in_bundle=initializer_immutable,
        ),
        Case(
            "delete_not_checked",
            "DELETE is not checked.",
            None,
            operation="DELETE",
            old_object=_tj(p, "bucket/dataset"),
        ),
    ]
