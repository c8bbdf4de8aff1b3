package trainertrainjoboverridemutabilityexternaldata

import data.lib.trainer.mutability
import data.lib.trainer.profile

trainjob(overrides) := {
	"apiVersion": "trainer.kubeflow.org/v1alpha1",
	"kind": "TrainJob",
	"metadata": {"namespace": "team-a", "name": "job"},
	"spec": {"suspend": true, profile.override_field: overrides},
}

update(uid) := {"review": {"uid": uid, "operation": "UPDATE", "oldObject": trainjob([{"a": 1}]), "object": trainjob([{"a": 2}])}}

answer(value) := {"responses": [["team-a/job#u1", value]], "errors": [], "status_code": 200, "system_error": ""}

test_the_lookup_key_carries_the_request_uid if {
	lookup_key == "team-a/job#u1" with input as update("u1")
	lookup_key == "team-a/job" with input as update("")
}

test_the_provider_is_the_parameter_or_the_default if {
	provider == "trainer-jobset-provider" with input as update("u1")
	provider == "mine" with input as object.union(update("u1"), {"parameters": {"providerName": "mine"}})
}

test_an_active_replicated_job_is_forbidden if {
	result := violation with input as update("u1")
		with data.lib.trainer.jobset_provider.fetch as answer({"found": true, "activeReplicatedJobs": ["node"]})
	{v.details.detail | some v in result} == {mutability.active_detail("node")}
}

test_a_provider_failure_is_internal if {
	failure := {"responses": [], "errors": [], "status_code": 500, "system_error": "connection refused"}
	[v] := [v | some v in violation] with input as update("u1") with data.lib.trainer.jobset_provider.fetch as failure
	v.details.type == "Internal"
	v.details.detail == "failed to get the state of JobSet team-a/job from external data provider trainer-jobset-provider: connection refused"
}
