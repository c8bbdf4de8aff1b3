package lib.trainer.managed_by

test_allowed_is_the_parameter_when_it_is_a_list if {
	allowed(["a"]) == ["b", "c"] with input as {"parameters": {"allowedValues": ["b", "c"]}}
	allowed(["a"]) == ["a"] with input as {"parameters": {}}
	allowed(["a"]) == ["a"] with input as {"parameters": {"allowedValues": "b"}}
}

test_not_allowed_names_the_string_values if {
	not_allowed(["x", 1, "y"]) == "ManagedBy must be x or y if set"
}

test_null_is_unset if {
	value({"spec": {"managedBy": "x"}}, ["spec", "managedBy"]) == "x"
	not value({"spec": {"managedBy": null}}, ["spec", "managedBy"])
	not value({"spec": {}}, ["spec", "managedBy"])
}

test_set_to_unset_is_a_change_and_audit_is_none if {
	update := {"operation": "UPDATE", "oldObject": {"spec": {"managedBy": "x"}}, "object": {"spec": {}}}
	changed(["spec", "managedBy"]) with input as {"review": update}
	not changed(["spec", "managedBy"]) with input as {"review": {"operation": "", "object": {"spec": {}}}}
}
