package trainertrainjobname

import data.lib.trainer.profile

trainjob(n) := {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": n}}

create(n) := {"review": {"operation": "CREATE", "object": trainjob(n)}}

longest := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

test_a_dns_1035_label_of_63_characters_is_valid if {
	count(violation) == 0 with input as create(longest)
	count(violation) == 0 with input as create("my-job-1")
}

test_64_characters_are_too_long_in_the_release_s_words if {
	# The expected set first: OPA 1.7.1 and 1.17.1 lay out `with` after a multi-line term differently.
	expected := {{
		"msg": sprintf("metadata.name: Invalid: %s", [messages[settings.check].too_long]),
		"details": {"field": "metadata.name", "type": "Invalid", "detail": messages[settings.check].too_long},
	}}
	violation == expected with input as create(concat("", [longest, "a"]))
}

test_a_dot_or_a_leading_digit_is_not_a_label if {
	every name in ["my.job", "1job", "job-", "Job"] {
		count(violation) == 1 with input as create(name)
	}
}

test_v2_0_checks_on_create_and_later_releases_on_every_write if {
	request := {"operation": "UPDATE", "object": trainjob("1job"), "oldObject": trainjob("1job")}
	count(violation) == count({1 | profile.name != "v2.0"}) with input as {"review": request}
}
