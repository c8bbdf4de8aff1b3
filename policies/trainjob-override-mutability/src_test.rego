package trainertrainjoboverridemutability

import data.lib.trainer.mutability
import data.lib.trainer.profile

trainjob(overrides) := {
	"apiVersion": "trainer.kubeflow.org/v1alpha1",
	"kind": "TrainJob",
	"metadata": {"namespace": "team-a", "name": "job"},
	"spec": {"suspend": true, profile.override_field: overrides},
}

inventory(statuses) := {"namespace": {"team-a": {"jobset.x-k8s.io/v1alpha2": {"JobSet": {"job": {"status": {"replicatedJobsStatus": statuses}}}}}}}

update := {"review": {"operation": "UPDATE", "oldObject": trainjob([{"a": 1}]), "object": trainjob([{"a": 2}])}}

test_the_jobset_is_read_from_the_inventory if {
	jobset_state == {"errors": [], "active": ["node"]} with input as update
		with data.inventory as inventory([{"name": "init", "active": 0}, {"name": "node", "active": 2}])
	jobset_state == {"errors": [], "active": []} with input as update with data.inventory as {}
}

test_a_change_while_the_jobset_runs_is_forbidden_per_active_job if {
	result := violation with input as update
		with data.inventory as inventory([{"name": "node", "active": 2}, {"name": "launcher", "active": 1}])
	{v.details.detail | some v in result} == {mutability.active_detail("node"), mutability.active_detail("launcher")}
}

test_a_change_while_suspended_and_inactive_is_allowed if {
	count(violation) == 0 with input as update with data.inventory as inventory([{"name": "node", "active": 0}])
}
