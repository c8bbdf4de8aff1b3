package trainertrainjobimmutablefields

import data.lib.trainer.profile

update(old_spec, new_spec) := {"review": {"operation": "UPDATE", "oldObject": {"spec": old_spec}, "object": {"spec": new_spec}}}

test_adding_or_removing_a_field_is_no_change if {
	changed(1, 2)
	not changed(null, 2)
	not changed(1, null)
	not changed({"a": 1}, {"a": 1})
}

test_runtime_ref_is_immutable_in_every_release if {
	[v] := [v | some v in violation] with input as update({"runtimeRef": {"name": "a"}}, {"runtimeRef": {"name": "b"}})
	v.details.field == "spec.runtimeRef"
	v.details.detail == object.get({"v2.0": "runtimeRef is immutable", "v2.1": "runtimeRef is immutable"}, profile.name, "field is immutable")
}

test_the_trainer_is_immutable_from_v2_2 if {
	result := violation with input as update({"trainer": {"numNodes": 1}}, {"trainer": {"numNodes": 2}})
	count(result) == count({1 | settings.patch_fields_immutable})
}

test_positions_index_each_key_also_when_keys_repeat if {
	positions(["a", "b"]) == {"a": [0], "b": [1]}
	positions(["a", "b", "a"]) == {"a": [0, 2], "b": [1]}
	job_names([{"name": "x"}, {}, "y", {"name": "z"}]) == {0: "x", 3: "z"}
}

patch_spec(seconds) := {"runtimePatches": [{"manager": "example.com/site", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": seconds}}}}}]}}}}]}

test_termination_grace_period_is_immutable_from_v2_3 if {
	result := {v.details.field | some v in violation} with input as update(patch_spec(300), patch_spec(600))
	expected := {"spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.terminationGracePeriodSeconds" | profile.name == "v2.3"}
	result == expected
}
