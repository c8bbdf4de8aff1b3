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
#   {"found": true, "ref": <ref>} or {"found": false, "ref": <ref>, "reason": unsupported | not_synced |
#   not_found, "type": <field.Error type>, "detail": <why>}. The not_found detail is the Kubernetes NotFound
#   text of the cached Get upstream does (the Kind, not the resource, names it). The runtime itself is
#   `get` (or `requested`): putting it into this object would convert all of it into OPA values.
lookup(trainjob) := {"found": true, "ref": r} if {
	r := ref(trainjob)
	is_object(get(trainjob, r))
} else := object.union({"found": false, "ref": r}, missing_reason(r)) if {
	r := ref(trainjob)
}

# METADATA
# title: get
# description: >-
#   The runtime `r` names, read by its own path in data.inventory (referencing the whole inventory would
#   copy every synced object into each evaluation: hundreds of milliseconds with 1,000 runtimes). OPA
#   converts a stored object into OPA values only where a ref reads it, so read parts of the runtime with
#   refs or object.get: handing it whole to a function or an object literal converts every field (about
#   0.5 ms for a runtime of 67 jobs, per template).
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
# title: requested
# description: The runtime the request's object references, as stored; undefined when it cannot be read.
requested := get(review.new_object, ref(review.new_object))

# METADATA
# title: requested_jobs
# description: >-
#   The requested runtime template's replicated jobs (objects only), converted once per evaluation; [] when
#   the runtime cannot be read.
requested_jobs := [job |
	list := object.get(requested, ["spec", "template", "spec", "replicatedJobs"], [])
	is_array(list)
	some job in list
	is_object(job)
]

# METADATA
# title: requested_job_names
# description: Names of the requested runtime template's replicated jobs.
requested_job_names := {name |
	name := requested_jobs[_].name # jobs are objects: a job without a name has none
	is_string(name)
}

# METADATA
# title: requested_ml_policy
# description: The requested runtime's spec.mlPolicy, {} when absent, not an object, or the runtime cannot be read.
requested_ml_policy := p if {
	p := object.get(requested, ["spec", "mlPolicy"], null)
	is_object(p)
} else := {}
