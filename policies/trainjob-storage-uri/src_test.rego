package trainertrainjobstorageuri

import data.lib.trainer.profile

trainjob(dataset) := {"metadata": {"namespace": "team-a", "name": "job"}, "spec": {"initializer": {"dataset": {"storageUri": dataset}}}}

test_the_crd_rule_s_values if {
	every value in ["", "hf://meta-llama/Llama-3.2-1B", "s3://bucket/key", "pvc://claim/path", "x+y.z-1://a"] {
		valid(value)
	}
	every value in ["bucket/key", "hf:/x", "s3://", "1s3://x", "://x", " s3://x", "s3://\n"] {
		not valid(value)
	}
}

test_only_v2_3_has_the_rule if {
	settings.check == object.get({"v2.3": true}, profile.name, false)
}

test_an_unchanged_value_is_ratcheted_on_update if {
	request := {"review": {"operation": "UPDATE", "oldObject": trainjob("bucket/key"), "object": trainjob("bucket/key")}}
	count(violation) == 0 with input as request
	changed := {"review": {"operation": "UPDATE", "oldObject": trainjob("bucket/a"), "object": trainjob("bucket/key")}}
	count(violation) == count({1 | settings.check}) with input as changed
}

test_a_non_object_spec_or_initializer_has_no_uri if {
	uri({"spec": "x"}, "dataset") == null
	uri({"spec": {"initializer": []}}, "model") == null
}
