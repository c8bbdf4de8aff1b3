package lib.trainer.mutability

import data.lib.trainer.profile

trainjob(suspend, overrides) := {"metadata": {"namespace": "team-a", "name": "job"}, "spec": {"suspend": suspend, profile.override_field: overrides}}

update(old, new) := {"review": {"operation": "UPDATE", "oldObject": old, "object": new}}

test_every_release_has_its_settings if {
	settings.prefix
	settings.suspend_rule in {"new", "old_or_new"}
	field == sprintf("spec.%s", [profile.override_field])
}

test_absent_null_and_empty_are_the_same_overrides if {
	not overrides_changed with input as update({"spec": {}}, trainjob(false, []))
	not overrides_changed with input as update(trainjob(false, null), trainjob(false, []))
	overrides_changed with input as update(trainjob(false, [{"a": 1}]), trainjob(false, [{"a": 2}]))
}

test_only_an_update_changes_overrides if {
	not overrides_changed with input as {"review": {"operation": "", "object": trainjob(false, [{"a": 2}])}}
}

test_unsuspending_counts_as_suspended_only_where_either_object_counts if {
	holds := {1 | suspend_rule_holds} with input as update(trainjob(true, []), trainjob(false, [{"a": 1}]))
	count(holds) == count({1 | settings.suspend_rule == "old_or_new"})
	suspend_rule_holds with input as update(trainjob(false, []), trainjob(true, []))
	not suspend_rule_holds with input as update(trainjob(false, []), trainjob("true", []))
}

test_details_name_the_list_as_the_release_does if {
	startswith(suspend_detail, sprintf("%s can only be modified when the TrainJob is suspended", [settings.prefix]))
	active_detail("node") == sprintf("%s cannot be modified when the JobSet's ReplicatedJob node is still active", [settings.prefix])
}

test_v2_2_1_back_ported_the_before_or_after_rule if {
	settings.suspend_rule == object.get({"v2.2": "old_or_new", "v2.3": "old_or_new"}, profile.name, "new")
}
