package trainertrainjobdeprecatedruntime

trainjob := {
	"apiVersion": "trainer.kubeflow.org/v1alpha1",
	"kind": "TrainJob",
	"metadata": {"name": "job", "namespace": "team-a"},
	"spec": {"runtimeRef": {"name": "old-runtime"}},
}

inventory(labels) := {"cluster": {"trainer.kubeflow.org/v1alpha1": {"ClusterTrainingRuntime": {"old-runtime": {
	"apiVersion": "trainer.kubeflow.org/v1alpha1",
	"kind": "ClusterTrainingRuntime",
	"metadata": {"name": "old-runtime", "labels": labels},
	"spec": {},
}}}}}

test_a_reference_to_a_deprecated_runtime_warns_where_the_release_does if {
	result := violation with input as {"review": {"operation": "CREATE", "object": trainjob}}
		with data.inventory as inventory({"trainer.kubeflow.org/support": "deprecated"})
	count(result) == count({1 | warns})
	every v in result {
		v.details.field == "spec.runtimeRef"
		startswith(v.details.detail, `Referenced ClusterTrainingRuntime "old-runtime" is deprecated`)
	}
}

test_a_supported_runtime_is_never_warned_about if {
	result := violation with input as {"review": {"operation": "CREATE", "object": trainjob}}
		with data.inventory as inventory({})
	count(result) == 0
}

test_deprecated_reads_only_the_labels_of_the_requested_runtime if {
	deprecated with data.lib.trainer.runtime.requested as {"metadata": {"labels": {"trainer.kubeflow.org/support": "deprecated"}}}
	not deprecated with data.lib.trainer.runtime.requested as {"metadata": {"labels": {}}}
}
