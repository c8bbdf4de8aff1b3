package lib.trainer.semantic

test_absent_null_empty if {
	same(null, [])
}

test_empty_object_and_null if {
	same({"a": {}}, {"a": null})
}

test_nested_empty_list if {
	same([{"a": 1, "b": []}], [{"a": 1}])
}

test_order_matters if {
	not same([1, 2], [2, 1])
}

test_quantity_requests if {
	same({"requests": {"cpu": "1"}}, {"requests": {"cpu": "1000m"}})
}

test_quantity_limits_memory if {
	same({"limits": {"memory": "1Gi"}}, {"limits": {"memory": "1024Mi"}})
}

test_size_limit if {
	same({"emptyDir": {"sizeLimit": "1Gi"}}, {"emptyDir": {"sizeLimit": "1024Mi"}})
}

test_quantity_only_under_resources if {
	not same({"name": "1"}, {"name": "1000m"})
}

test_scalar_vs_null if {
	not same("x", null)
}

test_different_values if {
	not same({"a": 1}, {"a": 2})
}

test_same if {
	same({"a": [1]}, {"a": [1]})
}

test_lists_one_entry_differs if {
	not same([{"a": 1}, {"requests": {"cpu": "1"}}], [{"a": 1}, {"requests": {"cpu": "2"}}])
}

test_lists_entries_equal_by_value if {
	same([{"a": 1}, {"requests": {"cpu": "1"}}], [{"a": 1}, {"requests": {"cpu": "1000m"}}])
}

test_lists_of_different_length if {
	not same([1], [1, 2])
}

test_extra_empty_entry if {
	not same([{}], [])
}

test_nested_extra_empty_entry if {
	not same({"gates": [{}]}, {"gates": null})
}

test_nested_lists_same_length_empty_entries if {
	same({"gates": [{}]}, {"gates": [null]})
}

test_quantity_number_and_string if {
	same({"limits": {"cpu": 1}}, {"limits": {"cpu": "1000m"}})
}

test_quantity_below_the_followed_levels if {
	old := {"a": {"b": [{"c": {"d": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}}}]}}
	new := {"a": {"b": [{"c": {"d": {"resources": {"requests": {"cpu": "1000m", "memory": "1024Mi"}}}}}]}}
	same(old, new)
}

test_quantity_below_the_followed_levels_differs if {
	old := {"a": {"b": [{"c": {"d": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}}}]}}
	new := {"a": {"b": [{"c": {"d": {"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}}}]}}
	not same(old, new)
}

test_quantities_against_null if {
	not same({"limits": {"cpu": "1"}}, {"limits": null})
}

test_same_rewrite_in_every_entry if {
	old := [{"name": "a", "limits": {"cpu": "1"}}, {"name": "b", "limits": {"cpu": "1"}}]
	new := [{"name": "a", "limits": {"cpu": "1000m"}}, {"name": "b", "limits": {"cpu": "1000m"}}]
	same(old, new)
}

test_same_rewrite_but_one_entry_differs if {
	old := [{"name": "a", "limits": {"cpu": "1"}}, {"name": "b", "limits": {"cpu": "1"}}]
	new := [{"name": "a", "limits": {"cpu": "1000m"}}, {"name": "c", "limits": {"cpu": "1000m"}}]
	not same(old, new)
}

test_apart_finds_a_scalar_that_differs if {
	apart([{"name": "a", "env": [{"name": "V", "value": "1"}]}], [{"name": "a", "env": [{"name": "V", "value": "2"}]}])
}

test_apart_finds_lists_of_different_lengths if {
	apart({"a": [1, 2]}, {"a": [1]})
}

test_apart_leaves_quantities_nulls_and_empties_to_same if {
	not apart({"limits": {"cpu": "1"}}, {"limits": {"cpu": "1000m"}})
	not apart({"limits": {"cpu": "1"}}, {"limits": {"cpu": "2"}})
	not apart({"a": null, "b": 1}, {"a": [], "b": 1})
	not apart({"a": 1}, {"a": {"b": 1}})
}

deep(v) := {"a": [{"b": [{"c": [{"d": [{"e": [{"f": [{"g": [{"h": v}]}]}]}]}]}]}]}

test_apart_follows_sixteen_levels if {
	apart(deep(1), deep(2))
	not apart([deep(1)], [deep(2)])
	not same([deep(1)], [deep(2)])
}

long_list(n) := [{"name": sprintf("job-%d", [i])} | some i in numbers.range(0, n - 1)]

with_entry(list, i, entry) := array.concat(array.concat(array.slice(list, 0, i), [entry]), array.slice(list, i + 1, count(list)))

test_long_lists_differ_in_their_last_entry if {
	list := long_list(1000)
	changed := with_entry(list, 999, {"name": "other"})
	count(differing_chunks(list, changed)) == 1
	apart(list, changed)
	not same(list, changed)
}

test_long_lists_equal_up_to_null_are_the_same if {
	list := long_list(1000)
	padded := with_entry(with_entry(list, 3, {"name": "job-3", "env": null}), 700, {"name": "job-700", "env": []})
	differing_chunks(list, padded) == {0, 640}
	not apart(list, padded)
	same(list, padded)
}

test_a_long_list_apart_after_a_difference_normalization_removes if {
	list := long_list(1000)
	changed := with_entry(with_entry(list, 3, {"name": "job-3", "env": null}), 900, {"name": "other"})
	apart(list, changed)
	not same(list, changed)
}

test_long_lists_of_a_quantity_compare_by_value if {
	list := [{"requests": {"cpu": "1"}} | some _ in numbers.range(1, 300)]
	spelled := with_entry(list, 299, {"requests": {"cpu": "1000m"}})
	not apart(list, spelled)
	same(list, spelled)
	not same(list, with_entry(list, 299, {"requests": {"cpu": "2"}}))
}

test_a_long_list_with_a_key_on_one_side_only_is_not_the_same if {
	list := long_list(1000)
	changed := with_entry(list, 900, {"name": "job-900", "x": "y"})
	not apart(list, changed) # apart follows keys both sides have
	not same(list, changed)
}
