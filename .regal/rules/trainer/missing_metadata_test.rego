package custom.regal.rules.trainer["missing-metadata_test"]

import data.custom.regal.rules.trainer["missing-metadata"] as rule

_module(text, name) := object.union(regal.parse_module(name, text), {"regal": {"file": {"name": name}}})

_annotated := "# METADATA\n# title: T\n# description: D\npackage p\n\n"

test_a_package_without_metadata_is_reported if {
	count(rule.report) == 1 with input as _module("package p\n\nx := 1\n", "lib/x.rego")
}

test_an_annotated_package_is_not if {
	count(rule.report) == 0 with input as _module(concat("", [_annotated, "x := 1\n"]), "lib/x.rego")
}

test_a_violation_rule_of_an_entry_module_without_metadata_is_reported if {
	text := concat("", [_annotated, "violation contains {\"msg\": \"m\"} if input.x\n"])
	count(rule.report) == 1 with input as _module(text, "policies/r/src.rego")
}

test_an_annotated_violation_rule_is_not if {
	text := concat("", [_annotated, "# METADATA\n# title: V\nviolation contains {\"msg\": \"m\"} if input.x\n"])
	count(rule.report) == 0 with input as _module(text, "policies/r/src.rego")
}

test_violation_rules_outside_entry_modules_and_tests_are_not_asked if {
	text := concat("", [_annotated, "violation contains {\"msg\": \"m\"} if input.x\n"])
	count(rule.report) == 0 with input as _module(text, "lib/x.rego")
	count(rule.report) == 0 with input as _module("package p\n\ntest_x if true\n", "lib/x_test.rego")
}
