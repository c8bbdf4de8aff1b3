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

deprecated(obj) if review.get(obj, ["metadata", "labels", "trainer.kubeflow.org/support"], null) == "deprecated"

# METADATA
# title: deprecated runtime
# description: Warn on CREATE (and in audit) for a ClusterTrainingRuntime labelled trainer.kubeflow.org/support=deprecated.
violation contains v if {
	review.applies_to({{ rule.rego_operations(profile) }})
	deprecated(review.new_object)
	name := sprintf("%v", [review.get(review.new_object, ["metadata", "name"], "")])
	v := violations.make("metadata.labels[trainer.kubeflow.org/support]", "Invalid", sprintf("ClusterTrainingRuntime %q is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: %s", [name, policy_url]))
}
{% endif %}
