package trainertrainjobruntimeref

import data.lib.trainer.profile

train_job(overrides) := {"metadata": {"namespace": "team-a", "name": "job"}, "spec": {"runtimeRef": {"name": "torch"}, profile.override_field: overrides}}

request_of(overrides) := {"review": {"operation": "CREATE", "object": train_job(overrides)}}

# One override of the job `node` with a container named `trainer`, in the shape of the profile's override list.
node_override := [{
	"manager": "example.com/kueue",
	"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
		"name": "node",
		"template": {"spec": {"template": {"spec": {"containers": [{"name": "trainer"}]}}}},
	}]}}},
}] if {
	runtime_patches
} else := [{"targetJobs": [{"name": "node"}], "spec": {"containers": [{"name": "trainer"}]}}] if {
	profile.override_field == "podTemplateOverrides"
} else := [{"targetJobs": [{"name": "node"}], "containers": [{"name": "trainer"}]}]

test_targets_read_the_profile_s_override_list if {
	[[job, pod]] := targets with input as request_of(node_override)
	job == "node"
	pod.containers == [{"name": "trainer"}]
}

test_runtime_patches_are_the_list_from_v2_2 if {
	count({1 | runtime_patches}) == count({1 | profile.name in {"v2.2", "v2.3"}})
	field == sprintf("spec.%s", [profile.override_field])
}

test_a_manager_is_a_domain_prefixed_path if {
	well_formed("example.com/kueue")
	not well_formed("kueue")
	domain_prefixed("Example.com/a")
	not domain_prefixed("/a")
	not domain_prefixed("example.com/")
	host("example.com/a/b") == "example.com"
	path("example.com/a/b") == "a/b"
}

test_duplicate_targets_are_found_in_one_pass if {
	duplicate_jobs == {"node"} with data.trainertrainjobruntimeref.targets as [["node", {}], ["launcher", {}], ["node", {}]]
	quoted("node") == `"node"`
	quoted(3) == "3"
}

test_a_missing_runtime_stops_every_other_check if {
	[v] := [v | some v in violation] with input as request_of(node_override) with data.inventory as {}
	v.details.field == "spec.runtimeRef"
}

runtime_with(jobs) := {"cluster": {"trainer.kubeflow.org/v1alpha1": {"ClusterTrainingRuntime": {"torch": {"spec": {"template": {"spec": {"replicatedJobs": jobs}}}}}}}}

job_with(name, containers) := {"name": name, "template": {"spec": {"template": {"spec": {"containers": [{"name": c} | some c in containers]}}}}}

container_missing(result) := {v | some v in result; contains(v.msg, "must not have container that doesn't exist")}

test_container_checks_read_each_job_s_names_once if {
	inventory := runtime_with([job_with("node", ["trainer"]), job_with("launcher", ["x"])])
	unique_job_names with input as request_of(node_override) with data.inventory as inventory
	has_container("node", "trainer") with input as request_of(node_override) with data.inventory as inventory
	not has_container("node", "x") with input as request_of(node_override) with data.inventory as inventory
	count(container_missing(violation)) == 0 with input as request_of(node_override) with data.inventory as inventory
	count(container_missing(violation)) == 1 with input as request_of(node_override)
		with data.inventory as runtime_with([job_with("node", ["other"])])
}

test_container_checks_hold_where_runtime_job_names_repeat if {
	inventory := runtime_with([job_with("node", ["other"]), job_with("node", ["trainer"])])
	not unique_job_names with input as request_of(node_override) with data.inventory as inventory
	has_container("node", "trainer") with input as request_of(node_override) with data.inventory as inventory
	count(container_missing(violation)) == 0 with input as request_of(node_override) with data.inventory as inventory
	count(container_missing(violation)) == 1 with input as request_of(node_override)
		with data.inventory as runtime_with([job_with("node", ["other"]), job_with("node", ["other"])])
}
