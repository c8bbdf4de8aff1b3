package trainertrainjobresourcebudget

train_job(namespace) := {"metadata": {"namespace": namespace, "name": "job"}, "spec": {"runtimeRef": {"name": "torch"}}}

create(namespace, parameters) := {"review": {"operation": "CREATE", "object": train_job(namespace)}, "parameters": parameters}

limits := {
	"maxTotal": {"cpu": "8", "nvidia.com/gpu": 4},
	"maxPods": 10,
	"namespaces": {"team-b": {"maxTotal": {"nvidia.com/gpu": 16}, "maxTrainerNodes": 2}},
}

test_a_namespace_s_limit_replaces_the_default_per_resource if {
	expected := {
		"cpu": {"value": "8", "namespace": ""},
		"nvidia.com/gpu": {"value": 16, "namespace": "team-b"},
	}
	resource_limits == expected with input as create("team-b", limits)
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

two_containers := {"spec": {"mlPolicy": {"torch": {}}, "template": {"spec": {"replicatedJobs": [{
	"name": "node",
	"template": {
		"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
		"spec": {"template": {"spec": {"containers": [
			{"name": "node", "resources": {"requests": {"memory": "5Gi"}}},
			{"name": "helper", "resources": {"requests": {"memory": "5Gi"}}},
		]}}},
	},
}]}}}}

# 5Gi is an int64 of nano-units, 640Gi is not: the sum of the OPA in Gatekeeper 3.20 to 3.23 wraps there.
test_a_total_past_int64_is_over_the_limit if {
	job := object.union(train_job("team-a"), {"spec": {"trainer": {"numNodes": 64}}})
	request := {"review": {"operation": "CREATE", "object": job}, "parameters": {"maxTotal": {"memory": "100Gi"}}}
	inventory := {"cluster": {"trainer.kubeflow.org/v1alpha1": {"ClusterTrainingRuntime": {"torch": two_containers}}}}
	[v] := [v | some v in violation] with input as request with data.inventory as inventory
	v.details.detail == "total memory requests 687194767360 exceed the limit 100Gi"
}
