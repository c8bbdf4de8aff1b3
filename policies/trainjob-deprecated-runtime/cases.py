"""Research C4 (profile table "deprecated ClusterTrainingRuntime"): a warning, as a `warn` Constraint, for
TrainJobs that reference a ClusterTrainingRuntime labelled trainer.kubeflow.org/support=deprecated."""

from __future__ import annotations

from kubeflow_trainer_policy.catalog import cases_of
from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import DEPRECATED, runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile

_runtime_deprecated = cases_of("runtime-deprecated")
RELEASES, SUFFIX = _runtime_deprecated.RELEASES, _runtime_deprecated.SUFFIX


def trainjob_cases(p: Profile) -> list[Case]:
    warn = (Expected("spec.runtimeRef", "Invalid", f'Referenced ClusterTrainingRuntime "old-runtime" {SUFFIX}'),)
    on = RELEASES[p.name].warnings
    old = runtime("old-runtime", labels=DEPRECATED)
    old_namespaced = runtime("old-runtime", kind="TrainingRuntime", labels=DEPRECATED)
    suspended = {"suspend": True}
    return [
        Case(
            "references_deprecated_runtime",
            "A TrainJob referencing a deprecated ClusterTrainingRuntime: a warning.",
            trainjob(p, runtime="old-runtime"),
            cluster=(old,),
            expected=warn if on else (),
        ),
        Case(
            "references_supported_runtime",
            "A runtime without the label: nothing.",
            trainjob(p, runtime="old-runtime"),
            cluster=(runtime("old-runtime"),),
        ),
        Case(
            "training_runtime_not_warned",
            "A deprecated TrainingRuntime is not warned about (upstream added that after v2.2).",
            trainjob(p, runtime="old-runtime", kind="TrainingRuntime"),
            cluster=(old_namespaced,),
        ),
        Case(
            "update_warned",
            "Upstream warns on UPDATE too.",
            trainjob(p, runtime="old-runtime", extra=suspended),
            operation="UPDATE",
            old_object=trainjob(p, runtime="old-runtime", extra=suspended),
            cluster=(old,),
            expected=warn if on else (),
        ),
        Case(
            "audit_warned",
            "Audit lists TrainJobs on deprecated runtimes.",
            trainjob(p, runtime="old-runtime"),
            operation=AUDIT,
            cluster=(old,),
            expected=warn if on else (),
        ),
    ]


def cases(p: Profile) -> list[Case]:
    return trainjob_cases(p)
