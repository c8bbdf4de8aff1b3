# METADATA
# title: {{ rule.title }}
# description: >-
{{ rule.description | comment(3) }}
# custom:
#   id: {{ rule.id }}
#   profile: {{ profile.name }}
package {{ rule.package }}

{% if settings.warnings %}
import data.lib.trainer.review
import data.lib.trainer.runtime
{% endif %}
import data.lib.trainer.violations

{% if not settings.warnings %}
# METADATA
# title: no deprecation policy
# description: Trainer {{ profile.name }} has no runtime deprecation policy, so this profile reports nothing.
violation contains v if {
	false
	v := violations.make("metadata.labels", "Invalid", "")
}
{% else %}
policy_url := "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy"

# METADATA
# title: deprecated
# description: The requested runtime carries trainer.kubeflow.org/support=deprecated (only its labels are read).
deprecated if object.get(runtime.requested, ["metadata", "labels", "trainer.kubeflow.org/support"], null) == "deprecated"

# METADATA
# title: referenced deprecated runtime
# description: >-
#   Warn (CREATE, UPDATE and audit) when the referenced ClusterTrainingRuntime, read from data.inventory,
#   carries trainer.kubeflow.org/support=deprecated.
violation contains v if {
	review.applies_to({{ rule.rego_operations(profile) }})
	lookup := runtime.lookup(review.new_object)
	lookup.found
	lookup.ref.kind == "ClusterTrainingRuntime"
	deprecated
	v := violations.make("spec.runtimeRef", "Invalid", sprintf("Referenced ClusterTrainingRuntime %q is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: %s", [sprintf("%v", [lookup.ref.name]), policy_url]))
}
{% endif %}
