package trainerv1jobmanagedby

pytorchjob(managed_by) := {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"runPolicy": {"managedBy": managed_by}}}

test_the_defaults_are_the_training_operator_and_multikueue if {
	allowed == ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"] with input as {}
}

test_the_trainer_is_no_controller_of_v1_jobs if {
	request := {"operation": "CREATE", "object": pytorchjob("trainer.kubeflow.org/trainjob-controller")}
	[v] := [v | some v in violation] with input as {"review": request}
	v.details == {
		"field": "spec.runPolicy.managedBy",
		"type": "Invalid",
		"detail": "ManagedBy must be kubeflow.org/training-operator or kueue.x-k8s.io/multikueue if set",
	}
}

test_unset_to_set_is_a_change if {
	request := {"operation": "UPDATE", "oldObject": {"spec": {}}, "object": pytorchjob("kueue.x-k8s.io/multikueue")}
	[v] := [v | some v in violation] with input as {"review": request}
	v.details.detail == "ManagedBy value is immutable"
}
