package trainertrainjobresourcebudget

train_job(namespace) := {"metadata": {"namespace": namespace, "name": "job"}, "spec": {"runtimeRef": {"name": "torch"}}}

create(namespace, parameters) := {"review": {"operation": "CREATE", "object": train_job(namespace)}, "parameters": parameters}

limits := {
	"maxTotal": {"cpu": "8", "nvidia.com/gpu": 4},
	"maxPods": 10,
	"namespaces": {"team-b": {"maxTotal": {"nvidia.com/gpu": 16}, "maxTrainerNodes": 2}},
}

test_a_namespace_s_limit_replaces_the_default_per_resource if {
	resource_limits == {
		"cpu": {"value": "8", "namespace": ""},
		"nvidia.com/gpu": {"value": 16, "namespace": "team-b"},
	} with input as create("team-b", limits)
	resource_limits["nvidia.com/gpu"] == {"value": 4, "namespace": ""} with input as create("team-a", limits)
}

test_count_limits_come_from_the_namespace_first if {
	count_limit("maxTrainerNodes") == {"value": 2, "namespace": "team-b"} with input as create("team-b", limits)
	count_limit("maxPods") == {"value": 10, "namespace": ""} with input as create("team-b", limits)
	not count_limit("maxTrainerNodes") with input as create("team-a", limits)
}

test_nothing_is_checked_without_a_limit if {
	not configured with input as create("team-a", {})
	count(violation) == 0 with input as create("team-a", {})
}

test_a_runtime_that_cannot_be_read_fails_closed_once_a_limit_is_set if {
	[v] := [v | some v in violation] with input as create("team-a", {"maxPods": 10}) with data.inventory as {}
	v.details.field == "spec.runtimeRef"
	startswith(v.details.detail, "cannot compute the TrainJob's resources: ")
}

test_messages_name_the_namespace_of_a_namespace_limit if {
	of_namespace({"namespace": "team-b"}) == " of namespace team-b"
	of_namespace({"namespace": ""}) == ""
}
