# METADATA
# title: Warn about TrainJobs that use a deprecated ClusterTrainingRuntime
# description: >-
#   From v2.1 the Trainer warns when a TrainJob (CREATE or UPDATE) references a ClusterTrainingRuntime labelled
#   trainer.kubeflow.org/support: deprecated: `Referenced ClusterTrainingRuntime "<name>" is deprecated and will be
#   removed in a future release of Kubeflow Trainer. See runtime deprecation policy:
#   https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy`. This rule
#   does the same (and in audit), reading the runtime from data.inventory, with enforcementAction warn.
#   TrainingRuntimes are not warned about: upstream added that after v2.2 (first release unconfirmed). A warning is
#   not a field.Error upstream; to keep every violation `<field>: <Type>: <detail>` this rule reports it as Invalid
#   at spec.runtimeRef with upstream's exact text as the detail. Profile v2.0 (no deprecation policy) reports
#   nothing.
# custom:
#   id: trainjob-deprecated-runtime
#   version: 1.0.9
#   specSection: profile table (deprecated ClusterTrainingRuntime)
#   rationale: Users learn that their TrainJob's runtime is going away while it still runs.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
#   enforcementAction: warn
#   inventory:
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: ClusterTrainingRuntime}
package trainertrainjobdeprecatedruntime

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.runtime
import data.lib.trainer.violations

# Trainer releases with a runtime deprecation policy warn about deprecated runtimes (from v2.1).
warns := {"v2.0": false, "v2.1": true, "v2.2": true, "v2.3": true}[profile.name]

policy_url := "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy"

# METADATA
# title: deprecated
# description: The requested runtime carries trainer.kubeflow.org/support=deprecated (only its labels are read).
deprecated if object.get(runtime.requested, ["metadata", "labels", "trainer.kubeflow.org/support"], null) == "deprecated"

# METADATA
# title: referenced deprecated runtime
# description: >-
#   Warn (CREATE, UPDATE and audit) when the referenced ClusterTrainingRuntime, read from data.inventory,
#   carries trainer.kubeflow.org/support=deprecated, in the releases that have a deprecation policy.
violation contains v if {
	warns
	review.applies_to({"CREATE", "UPDATE"})
	lookup := runtime.lookup(review.new_object)
	lookup.found
	lookup.ref.kind == "ClusterTrainingRuntime"
	deprecated
	v := violations.make("spec.runtimeRef", "Invalid", sprintf("Referenced ClusterTrainingRuntime %q is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: %s", [sprintf("%v", [lookup.ref.name]), policy_url]))
}
