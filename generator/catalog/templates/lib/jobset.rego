# METADATA
# title: JobSet state
# description: >-
#   The state of the JobSet a TrainJob owns (same namespace and name): {"errors": [...], "active": [...]},
#   `active` listing the replicated jobs with `active > 0` in status order. Read from the external data
#   provider (value {"found", "activeReplicatedJobs"}) or from data.inventory when JobSets are synced.
#   Failures are errors, never a silent allow; a JobSet that does not exist is inactive.
package lib.trainer.jobset

import data.lib.trainer.review

api_version := "jobset.x-k8s.io/v1alpha2"

# METADATA
# title: from_external_data
# description: >-
#   One batched external_data call. Decides on system_error and errors (null lists guarded), never
#   on status_code: answers served from Gatekeeper's cache carry status_code 0.
from_external_data(provider, key) := {"errors": errors(response, key), "active": active_of(response, key)} if {
    response := external_data({"provider": provider, "keys": [key]})
}

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

# METADATA
# title: from_inventory
# description: The same state read from data.inventory (JobSets synced by Gatekeeper); a missing JobSet is inactive.
from_inventory(inventory, namespace, name) := {"errors": [], "active": active_jobs(jobset)} if {
    jobset := review.get(inventory, ["namespace", namespace, api_version, "JobSet", name], null)
    jobset != null
} else := {"errors": [], "active": []}

active_jobs(jobset) := [name |
    some entry in review.array(review.get(jobset, ["status", "replicatedJobsStatus"], []))
    active := review.get(entry, ["active"], null)
    is_number(active)
    active > 0
    floor(active) == active
    name := review.get(entry, ["name"], "")
]
