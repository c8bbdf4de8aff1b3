package lib.trainer.review

test_get_from_non_object if {
	get("x", ["a"], 7) == 7
}

test_get_from_object if {
	get({"a": {"b": 1}}, ["a", "b"], 7) == 1
}

test_array_of_non_array if {
	array(5) == []
}

test_array_of_array if {
	array([1]) == [1]
}

test_audit_applies if {
	applies_to({"CREATE"}) with input as {"review": {"operation": "", "object": {}, "oldObject": null}}
}

test_absent_operation_is_audit if {
	applies_to({"CREATE"}) with input as {"review": {"object": {}}}
}

test_audit_is_never_an_update if {
	not is_update with input as {"review": {"operation": "", "object": {}, "oldObject": null}}
}

test_delete_does_not_apply if {
	not applies_to({"CREATE"}) with input as {"review": {"operation": "DELETE"}}
}

test_object_missing if {
	new_object == {} with input as {"review": {"operation": "DELETE"}}
}

test_old_object_present if {
	old_object == {"a": 1} with input as {"review": {"oldObject": {"a": 1}}}
}

test_old_object_missing if {
	old_object == {} with input as {"review": {}}
}

test_update_needs_old_object if {
	not is_update with input as {"review": {"operation": "UPDATE", "object": {}}}
}
