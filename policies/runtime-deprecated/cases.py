"""Research C4 (profile table "deprecated ClusterTrainingRuntime"): a warning, as a `warn` Constraint, for
ClusterTrainingRuntimes labelled trainer.kubeflow.org/support=deprecated."""

from __future__ import annotations

from dataclasses import dataclass

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import DEPRECATED, runtime
from kubeflow_trainer_policy.profiles import Profile


@dataclass(frozen=True)
class DeprecationSettings:
    warnings: bool
    """C4 (v2.1+): the Trainer warns about ClusterTrainingRuntimes labelled trainer.kubeflow.org/support=deprecated."""


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": DeprecationSettings(warnings=False),
    "v2.1": DeprecationSettings(warnings=True),
    "v2.2": DeprecationSettings(warnings=True),
    "v2.3": DeprecationSettings(warnings=True),
}

URL = "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy"
SUFFIX = (
    f"is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: {URL}"
)
LABEL_FIELD = "metadata.labels[trainer.kubeflow.org/support]"


def runtime_cases(p: Profile) -> list[Case]:
    warn = (Expected(LABEL_FIELD, "Invalid", f'ClusterTrainingRuntime "old-runtime" {SUFFIX}'),)
    on = RELEASES[p.name].warnings
    old = runtime("old-runtime", labels=DEPRECATED)
    return [
        Case(
            "deprecated_runtime_created",
            "CREATE of a deprecated ClusterTrainingRuntime: a warning.",
            old,
            expected=warn if on else (),
        ),
        Case("supported_runtime_created", "Without the label: nothing.", runtime("old-runtime")),
        Case(
            "label_value_is_exact",
            "Only the exact value `deprecated` counts.",
            runtime("old-runtime", labels={"trainer.kubeflow.org/support": "Deprecated"}),
        ),
        Case(
            "update_not_warned",
            "Upstream warns on CREATE only.",
            old,
            operation="UPDATE",
            old_object=runtime("old-runtime"),
        ),
        Case("audit_warned", "Audit lists deprecated runtimes.", old, operation=AUDIT, expected=warn if on else ()),
    ]


def cases(p: Profile) -> list[Case]:
    return runtime_cases(p)
