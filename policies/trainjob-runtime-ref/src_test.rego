package trainertrainjobruntimeref

import data.lib.trainer.profile

train_job(overrides) := {"metadata": {"namespace": "team-a", "name": "job"}, "spec": {"runtimeRef": {"name": "torch"}, profile.override_field: overrides}}

request_of(overrides) := {"review": {"operation": "CREATE", "object": train_job(overrides)}}

# One override of the job `node` with a container named `trainer`, in the shape of the profile's override list.
node_override := [override_of("node", [{"name": "trainer"}])]

# One override of the job `job` whose containers are `items`, in the shape of the profile's override list.
override_of(job, items) := {"manager": "example.com/kueue", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
	"name": job,
	"template": {"spec": {"template": {"spec": {"containers": items}}}},
}]}}}} if {
	runtime_patches
} else := {"targetJobs": [{"name": job}], "spec": {"containers": items}} if {
	profile.override_field == "podTemplateOverrides"
} else := {"targetJobs": [{"name": job}], "containers": items}

test_targets_read_the_profile_s_override_list if {
	[[job, pod]] := narrow_targets with input as request_of(node_override)
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

test_duplicate_targets_are_found_however_they_repeat if {
	listed := [
		{"targetJobs": [{"name": "node"}, {"name": "launcher"}]},
		{"targetJobs": [{"name": "node"}]}, # in two entries
		{"targetJobs": [{"name": "a"}, {"name": "a", "x": 1}]}, # two distinct items of one name
		{"targetJobs": [{"name": "b"}, {"name": "c"}, {"name": "b"}, {"name": "b"}]}, # one item repeated
		{"targetJobs": ["d", "d"]}, # items without a name name null
		{"targetJobs": [{"name": "e"}, {"name": "f"}]},
	]
	duplicate_jobs == {"node", "a", "b", null} with entries as listed with runtime_patches as false
	quoted("node") == `"node"`
	quoted(3) == "3"
}

test_a_null_name_and_an_item_without_a_name_list_null_twice if {
	listed := [{"targetJobs": [{"name": null}, "x", {"name": "g"}]}, {"targetJobs": [{"name": "h"}, {"name": "i"}, {"name": "j"}]}]
	duplicate_jobs == {null} with entries as listed with runtime_patches as false
}

test_targets_name_each_job_of_an_entry_once if {
	listed := [{"targetJobs": [{"name": "b"}, {"name": "b"}, "x", {"name": "b"}]}, {"targetJobs": "b"}, "b", {}]
	target_jobs == {"b", null} with entries as listed with runtime_patches as false
	target_count == 2 with entries as listed with runtime_patches as false
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

# One override of each of `jobs` with the containers `containers`, in the shape of the profile's override list.
overrides_for(jobs, containers) := [{
	"manager": "example.com/kueue",
	"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
		"name": job,
		"template": {"spec": {"template": {"spec": {"containers": [{"name": c} | some c in containers]}}}},
	} |
		some job in jobs
	]}}},
}] if {
	runtime_patches
} else := [{"targetJobs": [{"name": job} | some job in jobs], "spec": {"containers": [{"name": c} | some c in containers]}}] if {
	profile.override_field == "podTemplateOverrides"
} else := [{"targetJobs": [{"name": job} | some job in jobs], "containers": [{"name": c} | some c in containers]}]

test_jobs_a_container_is_missing_from_are_named_up_to_the_limit if {
	jobs := [sprintf("job-%03d", [i]) | some i in numbers.range(1, 150)]
	inventory := runtime_with([job_with(job, ["other"]) | some job in jobs])
	found := container_missing(violation) with input as request_of(overrides_for(jobs, ["trainer"]))
		with data.inventory as inventory
	count(found) == report_limit + 1
	some first in found
	endswith(first.msg, "in the runtime job job-001")
	not any_ends_with(found, "in the runtime job job-101") # after the first 100 in sorted order
	some more in found
	contains(more.msg, "doesn't exist in the runtime job: 50 more jobs (the first 100 are named)")
}

any_ends_with(found, suffix) if {
	some v in found
	endswith(v.msg, suffix)
}

# Runtime patches skip the jobs the runtime lacks; override entries check them against no containers.
unless_patched(jobs) := set() if {
	runtime_patches
} else := jobs

test_absent_jobs_are_found_in_one_set_or_target_by_target if {
	inventory := runtime_with([job_with("node", ["trainer"])])
	one := overrides_for(["a", "b", "node"], ["trainer"])
	absent_missing("containers") == unless_patched({"a", "b"}) with input as request_of(one) with data.inventory as inventory
	absent_missing("initContainers") == set() with input as request_of(one) with data.inventory as inventory
	mixed := array.concat(one, overrides_for(["c"], [])) # c's override sets no containers: target by target
	absent_missing("containers") == unless_patched({"a", "b"}) with input as request_of(mixed) with data.inventory as inventory
	absent_jobs == unless_patched({"a", "b", "c"}) with input as request_of(mixed) with data.inventory as inventory
}

test_duplicate_targets_are_named_up_to_the_limit if {
	names := [sprintf("job-%03d", [i]) | some i in numbers.range(1, 150)]
	listed := [{"targetJobs": [{"name": name} | some name in array.concat(names, names)]}]
	report := duplicate_report with entries as listed with runtime_patches as false
	count(report.named) == report_limit
	report.named[0] == "job-001"
	report.more == 50
	named_twice == set() with entries as listed with runtime_patches as false # one entry: only its repeats
}

test_jobs_of_one_name_pool_their_containers if {
	inventory := runtime_with([job_with("node", ["a"]), job_with("node", ["b"]), job_with("launcher", ["c"])])
	names := job_container_names with input as request_of(node_override) with data.inventory as inventory
	names == {"node": {"a", "b"}}
	has_container("node", "b") with input as request_of(node_override) with data.inventory as inventory
}

test_an_entry_of_several_jobs_is_checked_per_job_by_its_names if {
	inventory := runtime_with([job_with("a", ["trainer"]), job_with("b", ["other"])])
	wide := [{"targetJobs": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "containers": [{"name": "trainer"}, {}]}]
	[unit] := wide_units with entries as wide with runtime_patches as false
		with profile.override_field as "podSpecOverrides"
	unit.containers == {"trainer", null}
	found := missing_containers with entries as wide with runtime_patches as false
		with profile.override_field as "podSpecOverrides" with input as request_of(node_override)
		with data.inventory as inventory
	found == {["a", "containers"], ["b", "containers"]} # null is no container of a; c is absent_missing's
	absent := absent_missing("containers") with entries as wide with runtime_patches as false
		with profile.override_field as "podSpecOverrides" with input as request_of(node_override)
		with data.inventory as inventory
	absent == {"c"}
}

test_an_entry_of_several_jobs_with_no_more_names_than_a_job_is_checked_job_by_job if {
	inventory := runtime_with([job_with("a", ["trainer"]), job_with("b", ["other"])])
	wide := [{"targetJobs": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "trainer"}]}]
	most_known == 1 with entries as wide with runtime_patches as false
		with profile.override_field as "podSpecOverrides" with input as request_of(node_override)
		with data.inventory as inventory
	found := missing_containers with entries as wide with runtime_patches as false
		with profile.override_field as "podSpecOverrides" with input as request_of(node_override)
		with data.inventory as inventory
	found == {["b", "containers"]}
}

test_absent_jobs_are_found_by_the_entries_that_set_the_list if {
	inventory := runtime_with([job_with("node", ["trainer"])])
	narrow := [{"targetJobs": [{"name": "a"}], "containers": [{"name": "x"}]}, {"targetJobs": [{"name": "b"}]}]
	missing_containers == {["a", "containers"]} with entries as narrow with runtime_patches as false
		with profile.override_field as "podSpecOverrides" with input as request_of(node_override)
		with data.inventory as inventory
	wide := [
		{"targetJobs": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "x"}]},
		{"targetJobs": [{"name": "c"}, {"name": "d"}]},
	]
	absent_missing("containers") == {"a", "b"} with entries as wide with runtime_patches as false
		with profile.override_field as "podSpecOverrides" with input as request_of(node_override)
		with data.inventory as inventory
}

test_duplicates_beyond_the_limit_are_counted_in_one_violation if {
	names := [sprintf("job-%03d", [i]) | some i in numbers.range(1, 150)]
	listed := [{"targetJobs": [{"name": name} | some name in array.concat(names, names)]}]
	found := [v |
		some v in violation with entries as listed with runtime_patches as false
			with input as request_of(node_override) with data.inventory as runtime_with([job_with("node", ["trainer"])])
		contains(v.msg, "50 more targetJob names listed more than once")
	]
	count(found) == count({1 | settings.duplicate_target_check}) # v2.0 only
}

test_each_item_of_an_override_of_one_job_is_checked if {
	inventory := runtime_with([job_with("node", ["trainer"]), job_with("launcher", ["x"])])
	overrides := [
		override_of("node", [{"name": "trainer"}, {"name": "trainer"}]), # a name listed twice that the job has
		override_of("launcher", [{"name": "x"}, {}]), # an item without a name
		override_of("node", [{"name": "trainer"}, "trainer"]), # an item that is not an object
		override_of("ghost", [{"name": "x"}]), # a job the runtime lacks
	]
	found := missing_containers with input as request_of(overrides) with data.inventory as inventory
	found == {["launcher", "containers"], ["node", "containers"]} | unless_patched({["ghost", "containers"]})
}

test_a_repeated_pod_of_runtime_patches_is_read_once if {
	inventory := runtime_with([job_with("a", ["trainer"]), job_with("b", ["other"])])
	overrides := overrides_for(["a", "b"], ["trainer"])
	found := missing_containers with input as request_of(overrides) with data.inventory as inventory
	found == {["b", "containers"]}
	count(pods) == count({1 | runtime_patches}) with input as request_of(overrides) with data.inventory as inventory
}

test_alike_overrides_of_one_job_are_read_once if {
	inventory := runtime_with([job_with("node", ["trainer"]), job_with("launcher", ["x"])])
	items := [{"name": "trainer"}, {"name": "trainer"}]
	overrides := [override_of("node", items), override_of("launcher", items), override_of("ghost", items)]
	found := missing_containers with input as request_of(overrides) with data.inventory as inventory
	found == {["launcher", "containers"]} | unless_patched({["ghost", "containers"]})
	count({1 | alike}) == count({1 | not runtime_patches}) with input as request_of(overrides)
		with data.inventory as inventory
	unnamed := [override_of("node", [{}]), override_of("node", [{}])]
	missing_containers == {["node", "containers"]} with input as request_of(unnamed) with data.inventory as inventory
	reserved := [override_of("node", [{"name": "node", "env": [{"name": "A"}]}]), override_of("launcher", [{"name": "x"}])]
	not alike with input as request_of(reserved) with data.inventory as inventory
	count(in_place_pods) == 2 * count({1 | not runtime_patches}) with input as request_of(reserved)
		with data.inventory as inventory
}
