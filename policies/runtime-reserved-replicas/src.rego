# METADATA
# title: Reserved replicated jobs of training runtimes run exactly one replica
# description: >-
#   In TrainingRuntime and ClusterTrainingRuntime (CREATE and UPDATE), a replicated job labelled
#   trainer.kubeflow.org/trainjob-ancestor-step in (trainer, dataset-initializer, model-initializer), or in profile
#   v2.0 named launcher, must have replicas 1 when replicas is set (unset defaults to 1). From v2.1 an
#   ancestor-labelled job must also contain its container (node, dataset-initializer or model-initializer;
#   initContainers do not count). Profile v2.3 skips runtimes labelled trainer.kubeflow.org/webhook-validation:
#   disabled. Each check names at most 100 jobs, the first by index, and one more violation counts the rest
#   (upstream returns an error for each; replicatedJobs has no maxItems).
# custom:
#   id: runtime-reserved-replicas
#   version: 1.6.2
#   specSection: D
#   rationale: >-
#     The Trainer scales the trainer job through its parallelism (numNodes), not through JobSet replicas; more than
#     one replica of a reserved job duplicates initializers and trainer groups. Upstream validates TrainingRuntime
#     on CREATE only (a known bug); this rule checks both kinds on CREATE and UPDATE.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainingRuntime, ClusterTrainingRuntime]
#   operations: [CREATE, UPDATE]
package trainerruntimereservedreplicas

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

# METADATA
# title: releases
# description: >-
#   What each Trainer release checks: v2.0 also reserves the job named launcher; from v2.1 an ancestor-labelled job
#   must contain its container; from v2.3 runtimes labelled trainer.kubeflow.org/webhook-validation=disabled are
#   not validated.
releases := {
	"v2.0": {"launcher_is_reserved": true, "requires_ancestor_container": false, "honours_validation_disabled": false},
	"v2.1": {"launcher_is_reserved": false, "requires_ancestor_container": true, "honours_validation_disabled": false},
	"v2.2": {"launcher_is_reserved": false, "requires_ancestor_container": true, "honours_validation_disabled": false},
	"v2.3": {"launcher_is_reserved": false, "requires_ancestor_container": true, "honours_validation_disabled": true},
}

settings := releases[profile.name]

ancestor_label := "trainer.kubeflow.org/trainjob-ancestor-step"

reserved_ancestors := {"trainer", "dataset-initializer", "model-initializer"}

jobs := review.array(review.get(review.new_object, ["spec", "template", "spec", "replicatedJobs"], []))

# METADATA
# title: reserved
# description: >-
#   Ancestor-labelled trainer/initializer jobs, and in v2.0 the job named launcher. A job is read by ref, which is
#   undefined where a field is missing or the job is not an object: a runtime can hold thousands of jobs, and a
#   call per field (review.get) cost more than the rest of the check.
reserved(job) if reserved_ancestors[job.template.metadata.labels[ancestor_label]]

reserved(job) if {
	settings.launcher_is_reserved
	job.name == "launcher"
}

# METADATA
# title: validated
# description: >-
#   Every runtime, but from v2.3 not one labelled trainer.kubeflow.org/webhook-validation=disabled. Upstream skips
#   it with a webhook objectSelector, which Kubernetes matches against the object OR the old object: an UPDATE
#   that adds or removes the label is still validated.
validated if not settings.honours_validation_disabled

validated if not validation_disabled(review.new_object)

validated if {
	review.is_update
	not validation_disabled(review.old_object)
}

validation_disabled(obj) if review.get(obj, ["metadata", "labels", "trainer.kubeflow.org/webhook-validation"], null) == "disabled"

required_container := {"trainer": "node", "dataset-initializer": "dataset-initializer", "model-initializer": "model-initializer"}

has_container(job, container) if {
	containers := job.template.spec.template.spec.containers
	is_array(containers)
	containers[_].name == container
}

# METADATA
# title: report_limit
# description: >-
#   The most jobs one check names a violation each, the first by index; one more violation counts the rest.
#   replicatedJobs has no maxItems (JobSet), so a runtime can hold thousands of failing jobs: upstream returns an
#   error for each, but building thousands took longer than the rest of the review (docs/performance.md, sixth
#   round), and the CEL that Gatekeeper 3.18+ runs instead reports 8.
report_limit := 100

# METADATA
# title: replicas_jobs
# description: The index of each reserved job whose replicas is set and not 1, in order.
replicas_jobs := [i |
	some i, job in jobs
	replicas := job.replicas
	replicas != null
	replicas != 1
	reserved(job)
]

# METADATA
# title: container_jobs
# description: >-
#   [index, ancestor] of each ancestor-labelled job that lacks its container (initContainers do not count), in order.
container_jobs := [[i, ancestor_value] |
	some i, job in jobs
	ancestor_value := job.template.metadata.labels[ancestor_label]
	container := required_container[ancestor_value]
	not has_container(job, container)
]

checked if {
	review.applies_to({"CREATE", "UPDATE"})
	validated
}

# METADATA
# title: reserved replicas
# description: Invalid when a reserved job sets replicas to anything but 1 (the first report_limit jobs).
violation contains v if {
	checked
	some i in array.slice(replicas_jobs, 0, report_limit)
	v := violations.make(sprintf("spec.template.spec.replicatedJobs[%d].replicas", [i]), "Invalid", "always must be 1")
}

# METADATA
# title: more reserved replicas
# description: One Invalid that counts the reserved jobs with other replicas beyond report_limit.
violation contains v if {
	checked
	more := count(replicas_jobs) - report_limit
	more > 0
	v := violations.make("spec.template.spec.replicatedJobs", "Invalid", sprintf("always must be 1: %d more reserved jobs (the first %d are named)", [more, report_limit]))
}

# METADATA
# title: required container
# description: >-
#   Invalid (from v2.1) when an ancestor-labelled job lacks its container (initContainers do not count; the first
#   report_limit jobs).
violation contains v if {
	settings.requires_ancestor_container
	checked
	some [i, ancestor_value] in array.slice(container_jobs, 0, report_limit)
	v := violations.make(
		sprintf("spec.template.spec.replicatedJobs[%d].template.spec.template.spec.containers", [i]),
		"Invalid",
		sprintf("must contain the required container for the ancestor: %s", [ancestor_value]),
	)
}

# METADATA
# title: more required containers
# description: One Invalid (from v2.1) that counts the ancestor-labelled jobs without their container beyond report_limit.
violation contains v if {
	settings.requires_ancestor_container
	checked
	more := count(container_jobs) - report_limit
	more > 0
	v := violations.make("spec.template.spec.replicatedJobs", "Invalid", sprintf("must contain the required container for the ancestor: %d more jobs (the first %d are named)", [more, report_limit]))
}
