# METADATA
# title: {{ rule.title | yaml_scalar }}
# description: >-
{{ rule.description | comment(3) }}
# custom:
#   id: {{ rule.id | yaml_scalar }}
#   profile: {{ profile.name | yaml_scalar }}
package {{ rule.package }}

import data.lib.trainer.review
import data.lib.trainer.violations

ancestor_label := "trainer.kubeflow.org/trainjob-ancestor-step"

reserved_ancestors := {"trainer", "dataset-initializer", "model-initializer"}

jobs := review.array(review.get(review.new_object, ["spec", "template", "spec", "replicatedJobs"], []))

ancestor(job) := review.get(job, ["template", "metadata", "labels", ancestor_label], null)

# METADATA
# title: reserved
# description: Ancestor-labelled trainer/initializer jobs{{ ", and the job named launcher" if settings.launcher_is_reserved else "" }}.
reserved(job) if ancestor(job) in reserved_ancestors
{% if settings.launcher_is_reserved %}
reserved(job) if review.get(job, ["name"], null) == "launcher"
{% endif %}

{% if settings.honours_validation_disabled %}
# METADATA
# title: validated
# description: Runtimes labelled trainer.kubeflow.org/webhook-validation=disabled are not validated.
validated if review.get(review.new_object, ["metadata", "labels", "trainer.kubeflow.org/webhook-validation"], null) != "disabled"
{% else %}
validated := true
{% endif %}

{% if settings.requires_ancestor_container %}
required_container := {"trainer": "node", "dataset-initializer": "dataset-initializer", "model-initializer": "model-initializer"}

has_container(job, container) if {
	some c in review.array(review.get(job, ["template", "spec", "template", "spec", "containers"], []))
	review.get(c, ["name"], null) == container
}

{% endif %}
# METADATA
# title: reserved replicas
# description: Invalid when a reserved job sets replicas to anything but 1.
violation contains v if {
	review.applies_to({{ rule.rego_operations(profile) }})
	validated
	some i, job in jobs
	reserved(job)
	replicas := review.get(job, ["replicas"], null)
	replicas != null
	replicas != 1
	v := violations.make(sprintf("spec.template.spec.replicatedJobs[%d].replicas", [i]), "Invalid", "always must be 1")
}
{% if settings.requires_ancestor_container %}

# METADATA
# title: required container
# description: Invalid when an ancestor-labelled job lacks its container (initContainers do not count).
violation contains v if {
	review.applies_to({{ rule.rego_operations(profile) }})
	validated
	some i, job in jobs
	ancestor_value := ancestor(job)
	container := required_container[ancestor_value]
	not has_container(job, container)
	v := violations.make(
		sprintf("spec.template.spec.replicatedJobs[%d].template.spec.template.spec.containers", [i]),
		"Invalid",
		sprintf("must contain the required container for the ancestor: %s", [ancestor_value]),
	)
}
{% endif %}
