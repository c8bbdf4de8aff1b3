package trainerruntimereservedreplicas

import data.lib.trainer.profile
import data.lib.trainer.violations

job(name, ancestor, replicas) := {
	"name": name,
	"replicas": replicas,
	"template": {
		"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}},
		"spec": {"template": {"spec": {"containers": [{"name": "node"}]}}},
	},
}

cluster_runtime(labels, jobs) := {
	"apiVersion": "trainer.kubeflow.org/v1alpha1",
	"kind": "ClusterTrainingRuntime",
	"metadata": {"name": "torch", "labels": labels},
	"spec": {"template": {"spec": {"replicatedJobs": jobs}}},
}

test_every_release_has_its_settings if {
	settings.launcher_is_reserved == object.get({"v2.0": true}, profile.name, false)
	settings.honours_validation_disabled == object.get({"v2.3": true}, profile.name, false)
}

test_the_trainer_and_initializers_are_reserved_and_launcher_only_in_v2_0 if {
	reserved(job("node", "trainer", 1))
	reserved(job("dataset", "dataset-initializer", 1))
	not reserved(job("worker", "other", 1))
	count({1 | reserved({"name": "launcher"})}) == count({1 | settings.launcher_is_reserved})
}

test_a_trainer_job_with_two_replicas_is_invalid if {
	request := {"operation": "CREATE", "object": cluster_runtime({}, [job("node", "trainer", 2)])}

	# The expected set first: OPA 1.7.1 and 1.17.1 lay out `with` after a multi-line term differently.
	expected := {{
		"msg": "spec.template.spec.replicatedJobs[0].replicas: Invalid: always must be 1",
		"details": {"field": "spec.template.spec.replicatedJobs[0].replicas", "type": "Invalid", "detail": "always must be 1"},
	}}
	violation == expected with input as {"review": request}
}

test_validation_disabled_is_honoured_from_v2_3 if {
	labels := {"trainer.kubeflow.org/webhook-validation": "disabled"}
	request := {"operation": "CREATE", "object": cluster_runtime(labels, [job("node", "trainer", 2)])}
	count(violation) == count({1 | not settings.honours_validation_disabled}) with input as {"review": request}
}

test_past_the_report_limit_jobs_are_counted_not_named if {
	jobs := [job(sprintf("node-%d", [i]), "trainer", 2) | some i in numbers.range(0, 149)]
	request := {"operation": "CREATE", "object": cluster_runtime({}, jobs)}
	named := {v | some v in violation; endswith(v.details.field, "].replicas")} with input as {"review": request}
	count(named) == 100
	named[violations.make("spec.template.spec.replicatedJobs[99].replicas", "Invalid", "always must be 1")]
	more := violations.make("spec.template.spec.replicatedJobs", "Invalid", "always must be 1: 50 more reserved jobs (the first 100 are named)")
	more in violation with input as {"review": request}
}

test_past_the_report_limit_missing_containers_are_counted_from_v2_1 if {
	jobs := [job(sprintf("init-%d", [i]), "dataset-initializer", 1) | some i in numbers.range(0, 100)]
	request := {"operation": "CREATE", "object": cluster_runtime({}, jobs)}
	found := violation with input as {"review": request}
	more := violations.make("spec.template.spec.replicatedJobs", "Invalid", "must contain the required container for the ancestor: 1 more jobs (the first 100 are named)")
	count(found) == count({1 | settings.requires_ancestor_container}) * 101
	count({1 | more in found}) == count({1 | settings.requires_ancestor_container})
}
