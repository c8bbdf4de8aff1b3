# METADATA
# title: JobSet state from data.inventory
# description: >-
#   The state of the JobSet a TrainJob owns (same namespace and name), read from JobSets that
#   Gatekeeper syncs into data.inventory: {"errors": [], "active": [...]}, `active` listing the
#   replicated jobs with `active > 0` in status order. A JobSet that is not synced is inactive.
package lib.trainer.jobset

import data.lib.trainer.review

api_version := "jobset.x-k8s.io/v1alpha2"

# METADATA
# title: from_inventory
# description: >-
#   The state read from data.inventory (JobSets synced by Gatekeeper); a missing JobSet is inactive. The
#   JobSet is read by its own path: referencing the whole inventory would copy every synced object into
#   each evaluation.
from_inventory(namespace, name) := {"errors": [], "active": active_jobs(jobset)} if {
	jobset := data.inventory.namespace[namespace][api_version].JobSet[name]
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
