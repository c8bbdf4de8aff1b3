# METADATA
# title: Warn about deprecated ClusterTrainingRuntimes
# description: >-
#   From v2.1 the Trainer warns when a ClusterTrainingRuntime labelled trainer.kubeflow.org/support: deprecated is
#   created: `ClusterTrainingRuntime "<name>" is deprecated and will be removed in a future release of Kubeflow
#   Trainer. See runtime deprecation policy:
#   https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy`. This rule
#   does the same on CREATE and in audit (not on UPDATE, as upstream), with enforcementAction warn. A warning is not
#   a field.Error upstream; to keep every violation `<field>: <Type>: <detail>` this rule reports it as Invalid at
#   metadata.labels[trainer.kubeflow.org/support] with upstream's exact text as the detail. Profile v2.0 (no
#   deprecation policy) reports nothing.
# custom:
#   id: runtime-deprecated
#   version: 1.1.2
#   specSection: profile table (deprecated ClusterTrainingRuntime)
#   rationale: >-
#     Deprecated runtimes will be removed by a later Trainer release; platform teams see which ones are still
#     installed (audit) without blocking anybody.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [ClusterTrainingRuntime]
#   operations: [CREATE]
#   enforcementAction: warn
package trainerruntimedeprecated

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

# Trainer releases with a runtime deprecation policy warn about deprecated runtimes (from v2.1).
warns := {"v2.0": false, "v2.1": true, "v2.2": true, "v2.3": true}[profile.name]

policy_url := "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy"

deprecated(obj) if review.get(obj, ["metadata", "labels", "trainer.kubeflow.org/support"], null) == "deprecated"

# METADATA
# title: deprecated runtime
# description: >-
#   Warn on CREATE (and in audit) for a ClusterTrainingRuntime labelled trainer.kubeflow.org/support=deprecated,
#   in the releases that have a deprecation policy.
violation contains v if {
	warns
	review.applies_to({"CREATE"})
	deprecated(review.new_object)
	name := sprintf("%v", [review.get(review.new_object, ["metadata", "name"], "")])
	v := violations.make("metadata.labels[trainer.kubeflow.org/support]", "Invalid", sprintf("ClusterTrainingRuntime %q is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: %s", [name, policy_url]))
}
