package custom.regal.rules.gatekeeper["data-reference_test"]

import data.custom.regal.rules.gatekeeper["data-reference"] as rule

_module(text, name) := object.union(regal.parse_module(name, text), {"regal": {"file": {"name": name}}})

test_inventory_and_lib_are_allowed if {
	module := _module("package lib.x\n\nimport data.lib.trainer.review\n\nr := data.inventory.namespace\n", "p/src.rego")
	count(rule.report) == 0 with input as module
}

test_other_data_is_reported if {
	module := _module("package lib.x\n\nr := data.other.thing\n", "p/src.rego")
	count(rule.report) == 1 with input as module
}

test_an_import_of_other_data_is_reported if {
	module := _module("package lib.x\n\nimport data.kubeflow.trainer\n\nr := trainer.x\n", "p/src.rego")
	count(rule.report) == 1 with input as module
}

test_tests_are_exempt if {
	module := _module("package lib.x\n\ntest_r if data.other.thing\n", "p/src_test.rego")
	count(rule.report) == 0 with input as module
}
