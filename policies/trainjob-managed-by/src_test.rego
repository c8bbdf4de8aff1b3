package trainertrainjobmanagedby

import data.lib.trainer.profile

trainjob(managed_by) := {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": {"managedBy": managed_by}}

test_the_defaults_are_the_trainer_and_multikueue if {
	allowed == ["trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"] with input as {}
}

test_a_value_outside_the_parameter_is_invalid if {
	request := {"operation": "CREATE", "object": trainjob("example.com/other")}
	[v] := [v | some v in violation] with input as {"review": request, "parameters": {"allowedValues": ["example.com/mine"]}}
	v.details == {"field": "spec.managedBy", "type": "Invalid", "detail": "ManagedBy must be example.com/mine if set"}
}

test_a_change_is_invalid_with_the_release_s_detail if {
	request := {"operation": "UPDATE", "oldObject": trainjob("kueue.x-k8s.io/multikueue"), "object": trainjob("trainer.kubeflow.org/trainjob-controller")}
	[v] := [v | some v in violation] with input as {"review": request}

	# The webhook's words until v2.1, the CRD's CEL rule's from v2.2.
	v.details.detail == object.get({"v2.0": "ManagedBy value is immutable", "v2.1": "ManagedBy value is immutable"}, profile.name, "field is immutable")
}
