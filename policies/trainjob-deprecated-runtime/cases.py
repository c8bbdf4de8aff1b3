"""Research C4 (profile table "deprecated ClusterTrainingRuntime"): a warning, as a `warn` Constraint, for
TrainJobs that reference a ClusterTrainingRuntime labelled trainer.kubeflow.org/support=deprecated."""

from __future__ import annotations

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, DataNeeds, Expected, MatchKind, Rule, SyncKind
from kubeflow_trainer_policy.catalog.rules.runtime_deprecated import CHOICES, SETTINGS, SUFFIX, URL
from kubeflow_trainer_policy.catalog.trainjob_fixtures import DEPRECATED, runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile


def trainjob_cases(p: Profile) -> list[Case]:
    warn = (Expected("spec.runtimeRef", "Invalid", f'Referenced ClusterTrainingRuntime "old-runtime" {SUFFIX}'),)
    on = SETTINGS[p.name].warnings
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


RULE = Rule(
    id="trainjob-deprecated-runtime",
    title="Warn about TrainJobs that use a deprecated ClusterTrainingRuntime",
    description=(
        "From v2.1 the Trainer warns when a TrainJob (CREATE or UPDATE) references a ClusterTrainingRuntime "
        'labelled trainer.kubeflow.org/support: deprecated: `Referenced ClusterTrainingRuntime "<name>" is '
        "deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: "
        f"{URL}`. "
        "This rule does the same (and in audit), reading the runtime from data.inventory, with enforcementAction "
        "warn. TrainingRuntimes are not warned about: upstream added that after v2.2 (first release unconfirmed). "
        + CHOICES.format(field="spec.runtimeRef")
    ),
    rationale="Users learn that their TrainJob's runtime is going away while it still runs.",
    spec_section="profile table (deprecated ClusterTrainingRuntime)",
    version="1.0.6",
    match=(MatchKind(("trainer.kubeflow.org",), ("TrainJob",)),),
    operations=("CREATE", "UPDATE"),
    parameters=(),
    data=DataNeeds(inventory=(SyncKind("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime"),)),
    libs=("violations", "review", "runtime"),
    cases=trainjob_cases,
    enforcement_action="warn",
    settings=SETTINGS,
)
