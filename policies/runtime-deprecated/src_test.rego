package trainerruntimedeprecated

cluster_runtime(labels) := {
	"apiVersion": "trainer.kubeflow.org/v1alpha1",
	"kind": "ClusterTrainingRuntime",
	"metadata": {"name": "old-runtime", "labels": labels},
	"spec": {},
}

deprecated_label := {"trainer.kubeflow.org/support": "deprecated"}

test_only_the_exact_label_value_is_deprecated if {
	deprecated(cluster_runtime(deprecated_label))
	not deprecated(cluster_runtime({"trainer.kubeflow.org/support": "Deprecated"}))
	not deprecated(cluster_runtime({}))
}

test_create_warns_exactly_where_the_release_has_a_deprecation_policy if {
	result := violation with input as {"review": {"operation": "CREATE", "object": cluster_runtime(deprecated_label)}}
	count(result) == count({1 | warns})
	every v in result {
		v.details.field == "metadata.labels[trainer.kubeflow.org/support]"
		startswith(v.details.detail, `ClusterTrainingRuntime "old-runtime" is deprecated`)
	}
}

test_update_is_never_warned if {
	request := {"operation": "UPDATE", "object": cluster_runtime(deprecated_label), "oldObject": cluster_runtime({})}
	count(violation) == 0 with input as {"review": request}
}
