# METADATA
# title: The runtime a TrainJob references
# description: >-
#   spec.runtimeRef with upstream's defaults, and the referenced TrainingRuntime (in the TrainJob's
#   namespace) or ClusterTrainingRuntime read from data.inventory (Gatekeeper's sync). When the runtime
#   cannot be read it says why: an unsupported kind, a kind that is not synced at all, or not found.
package lib.trainer.runtime

import data.lib.trainer.review

api_group := "trainer.kubeflow.org"

api_version := "trainer.kubeflow.org/v1alpha1"

# METADATA
# title: ref
# description: >-
#   The TrainJob's runtimeRef with upstream's CRD defaults: kind ClusterTrainingRuntime, apiGroup
#   trainer.kubeflow.org (absent or null).
ref(trainjob) := {
	"name": review.get(trainjob, ["spec", "runtimeRef", "name"], ""),
	"kind": defaulted(review.get(trainjob, ["spec", "runtimeRef", "kind"], null), "ClusterTrainingRuntime"),
	"apiGroup": defaulted(review.get(trainjob, ["spec", "runtimeRef", "apiGroup"], null), api_group),
}

defaulted(null, fallback) := fallback

defaulted(value, _) := value if value != null

# METADATA
# title: group_kind
# description: Kubernetes' GroupKind.String() of a ref, `<kind>.<apiGroup>` or `<kind>` when the group is empty.
group_kind(r) := sprintf("%v", [r.kind]) if r.apiGroup == ""

group_kind(r) := sprintf("%v.%v", [r.kind, r.apiGroup]) if r.apiGroup != ""

# METADATA
# title: lookup
# description: >-
#   {"found": true, "runtime": <object>, "ref": <ref>} or {"found": false, "ref": <ref>, "reason":
#   unsupported | not_synced | not_found, "type": <field.Error type>, "detail": <why>}. The not_found detail
#   is the Kubernetes NotFound text of the cached Get upstream does (the Kind, not the resource, names it).
#   The runtime is read by its own path in data.inventory: referencing the whole inventory would copy
#   every synced object into each evaluation (hundreds of milliseconds with 1,000 runtimes).
lookup(trainjob) := {"found": true, "runtime": found, "ref": r} if {
	r := ref(trainjob)
	found := get(trainjob, r)
} else := object.union({"found": false, "ref": r}, missing_reason(r)) if {
	r := ref(trainjob)
}

get(trainjob, r) := found if {
	r.apiGroup == api_group
	r.kind == "TrainingRuntime"
	namespace := review.get(trainjob, ["metadata", "namespace"], "")
	found := data.inventory.namespace[namespace][api_version].TrainingRuntime[r.name]
	is_object(found)
}

get(_, r) := found if {
	r.apiGroup == api_group
	r.kind == "ClusterTrainingRuntime"
	found := data.inventory.cluster[api_version].ClusterTrainingRuntime[r.name]
	is_object(found)
}

missing_reason(r) := {"reason": "unsupported", "type": "Invalid", "detail": sprintf("unsupported runtime: %s", [group_kind(r)])} if {
	not supported(r)
} else := {"reason": "not_synced", "type": "Internal", "detail": sprintf("%s objects are not synced into Gatekeeper's inventory, so the runtime cannot be read", [r.kind])} if {
	not synced(r.kind)
} else := {"reason": "not_found", "type": "Invalid", "detail": sprintf("%s.%s %q not found", [r.kind, api_group, sprintf("%v", [r.name])])}

supported(r) if {
	r.apiGroup == api_group
	r.kind in {"TrainingRuntime", "ClusterTrainingRuntime"}
}

# METADATA
# title: synced
# description: Some object of the kind is in data.inventory (only asked when the runtime was not found).
synced("ClusterTrainingRuntime") if {
	some name
	is_object(data.inventory.cluster[api_version].ClusterTrainingRuntime[name])
}

synced("TrainingRuntime") if {
	some namespace, name
	is_object(data.inventory.namespace[namespace][api_version].TrainingRuntime[name])
}

# METADATA
# title: jobs
# description: The runtime template's replicated jobs (objects only).
jobs(runtime) := [job |
	some job in review.array(review.get(runtime, ["spec", "template", "spec", "replicatedJobs"], []))
	is_object(job)
]

# METADATA
# title: job_names
# description: Names of the runtime template's replicated jobs.
job_names(runtime) := {name |
	some job in jobs(runtime)
	name := review.get(job, ["name"], null)
	is_string(name)
}

# METADATA
# title: container_names
# description: >-
#   Names of the (init)containers of the runtime's replicated job `name`, as the runtime template has them
#   (before any TrainJob override is merged).
container_names(runtime, name) := {c |
	some job in jobs(runtime)
	review.get(job, ["name"], null) == name
	some list in ["initContainers", "containers"]
	some container in review.array(review.get(job, ["template", "spec", "template", "spec", list], []))
	c := review.get(container, ["name"], null)
	is_string(c)
}

# METADATA
# title: ml_policy
# description: The runtime's spec.mlPolicy, {} when absent or not an object.
ml_policy(runtime) := p if {
	p := review.get(runtime, ["spec", "mlPolicy"], null)
	is_object(p)
} else := {}
