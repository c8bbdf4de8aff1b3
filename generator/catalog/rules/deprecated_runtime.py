"""Research C4 (profile table "deprecated ClusterTrainingRuntime"): warnings, as `warn` Constraints, for
ClusterTrainingRuntimes labelled trainer.kubeflow.org/support=deprecated and the TrainJobs that use them."""

from __future__ import annotations

from generator.catalog.model import AUDIT, Case, DataNeeds, Expected, MatchKind, Rule, SyncKind
from generator.catalog.trainjob_fixtures import DEPRECATED, runtime, trainjob
from generator.profiles import Profile

URL = "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy"
SUFFIX = (
    f"is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: {URL}"
)
LABEL_FIELD = "metadata.labels[trainer.kubeflow.org/support]"
CHOICES = (
    "A warning is not a field.Error upstream; to keep every violation `<field>: <Type>: <detail>` this rule "
    "reports it as Invalid at {field} with upstream's exact text as the detail. Profile v2.0 (no deprecation "
    "policy) reports nothing."
)


def runtime_cases(p: Profile) -> list[Case]:
    warn = (Expected(LABEL_FIELD, "Invalid", f'ClusterTrainingRuntime "old-runtime" {SUFFIX}'),)
    on = p.deprecated_runtime_warnings
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


def trainjob_cases(p: Profile) -> list[Case]:
    warn = (Expected("spec.runtimeRef", "Invalid", f'Referenced ClusterTrainingRuntime "old-runtime" {SUFFIX}'),)
    on = p.deprecated_runtime_warnings
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


RUNTIME_RULE = Rule(
    id="runtime-deprecated",
    kind="TrainerRuntimeDeprecated",
    title="Warn about deprecated ClusterTrainingRuntimes",
    description=(
        "From v2.1 the Trainer warns when a ClusterTrainingRuntime labelled trainer.kubeflow.org/support: "
        'deprecated is created: `ClusterTrainingRuntime "<name>" is deprecated and will be removed in a future '
        f"release of Kubeflow Trainer. See runtime deprecation policy: {URL}`. This rule does the same on CREATE "
        "and in audit (not on UPDATE, as upstream), with enforcementAction warn. " + CHOICES.format(field=LABEL_FIELD)
    ),
    rationale=(
        "Deprecated runtimes will be removed by a later Trainer release; platform teams see which ones are still "
        "installed (audit) without blocking anybody."
    ),
    spec_section="profile table (deprecated ClusterTrainingRuntime)",
    version="1.0.0",
    match=(MatchKind(("trainer.kubeflow.org",), ("ClusterTrainingRuntime",)),),
    operations=("CREATE",),
    parameters=(),
    data=DataNeeds(),
    template="deprecated_runtime.rego.j2",
    libs=("violations", "review"),
    cases=runtime_cases,
    template_vars={"subject": "ClusterTrainingRuntime"},
    enforcement_action="warn",
)

TRAINJOB_RULE = Rule(
    id="trainjob-deprecated-runtime",
    kind="TrainerTrainJobDeprecatedRuntime",
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
    version="1.0.1",
    match=(MatchKind(("trainer.kubeflow.org",), ("TrainJob",)),),
    operations=("CREATE", "UPDATE"),
    parameters=(),
    data=DataNeeds(inventory=(SyncKind("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime"),)),
    template="deprecated_runtime.rego.j2",
    libs=("violations", "review", "runtime"),
    cases=trainjob_cases,
    template_vars={"subject": "TrainJob"},
    enforcement_action="warn",
)
