# METADATA
# title: JobSet state from the external data provider
# description: >-
#   The state of the JobSet a TrainJob owns, from the provider's value {"found", "activeReplicatedJobs"}:
#   {"errors": [...], "active": [...]}. Failures are errors, never a silent allow; a JobSet that does
#   not exist is inactive. Only this lib calls external_data, so templates that do not import it
#   load in gator, which registers no external_data builtin.
package lib.trainer.jobset_provider

import data.lib.trainer.review

# METADATA
# title: from_external_data
# description: >-
#   One batched external_data call. Decides on system_error and errors (null lists guarded), never
#   on status_code: answers served from Gatekeeper's cache carry status_code 0.
from_external_data(provider, key) := {"errors": errors(response, key), "active": active_of(response, key)} if {
	response := fetch(provider, [key])
}

# METADATA
# title: fetch
# description: >-
#   The one external_data call. Unit tests replace this function (`with
#   data.lib.trainer.jobset_provider.fetch as <answer>`): OPA's `with` cannot replace a builtin that its
#   capabilities declare but that has no implementation, as external_data has none outside Gatekeeper.
fetch(provider, keys) := external_data({"provider": provider, "keys": keys})

errors(response, key) := [sprintf("%v", [e])] if {
	e := system_error(response)
} else := errs if {
	errs := key_errors(response, key)
	count(errs) > 0
} else := ["the provider returned no answer for this key"] if {
	count(answers(response, key)) == 0
} else := ["the provider returned more than one answer for this key"] if {
	count(answers(response, key)) > 1
} else := ["the provider returned an unexpected value"] if {
	some value in answers(response, key)
	not valid_value(value)
} else := []

system_error(response) := e if {
	e := review.get(response, ["system_error"], "")
	e != ""
	e != null
}

key_errors(response, key) := [sprintf("%v", [pair[1]]) |
	some pair in review.array(review.get(response, ["errors"], []))
	is_array(pair)
	count(pair) == 2
	pair[0] == key
]

# The distinct values answered for the key (Gatekeeper passes duplicates through; more than one is an error).
answers(response, key) := {pair[1] |
	some pair in review.array(review.get(response, ["responses"], []))
	is_array(pair)
	count(pair) == 2
	pair[0] == key
}

valid_value(value) if {
	is_boolean(review.get(value, ["found"], null))
	is_array(review.get(value, ["activeReplicatedJobs"], null))
}

active_of(response, key) := value.activeReplicatedJobs if {
	count(answers(response, key)) == 1
	some value in answers(response, key)
	valid_value(value)
	value.found == true
} else := []
