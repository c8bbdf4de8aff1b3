# METADATA
# title: TrainJob fields that never change after creation
# description: >-
#   The CRD's CEL transition rules (self == oldSelf) of each profile, on UPDATE only (never in audit, which has no
#   old object): spec.runtimeRef (v2.0/v2.1 `runtimeRef is immutable`); from v2.2 spec.runtimeRef, spec.initializer,
#   spec.trainer and spec.activeDeadlineSeconds (`field is immutable`), and in each runtimePatches entry (correlated
#   by manager) and each of its replicated jobs (correlated by name) the pod spec's serviceAccountName, volumes,
#   initContainers, containers, imagePullSecrets and securityContext, from v2.3 also terminationGracePeriodSeconds.
#   As in Kubernetes, a rule fires only when the
#   field is set in both objects: adding or removing it is not caught. spec.managedBy, also immutable upstream, is
#   rule trainjob-managed-by's. The patch rules do not depend on spec.suspend (the shared spec says 'while
#   suspended'; upstream's CEL has no such condition).
# custom:
#   id: trainjob-immutable-fields
#   version: 1.4.0
#   specSection: E8
#   rationale: >-
#     The Trainer builds the JobSet from these fields once; changing them later is either ignored or breaks the
#     running job. Gatekeeper repeats the CRD's rules for clusters that run an older CRD, and for CI.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [UPDATE]
package trainertrainjobimmutablefields

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

# METADATA
# title: releases
# description: >-
#   The spec fields each release makes immutable on UPDATE, with their CEL messages (managedBy is
#   trainjob-managed-by's), whether pod spec fields of each runtime patch are immutable too (v2.2+), and which:
#   six in v2.2, and terminationGracePeriodSeconds, which v2.3 added to the patch with its own transition rule.
releases := {
	"v2.0": {"immutable": [["runtimeRef", "runtimeRef is immutable"]], "patch_fields_immutable": false, "patch_fields": []},
	"v2.1": {"immutable": [["runtimeRef", "runtimeRef is immutable"]], "patch_fields_immutable": false, "patch_fields": []},
	"v2.2": {"immutable": later_immutable, "patch_fields_immutable": true, "patch_fields": v2_2_patch_fields},
	"v2.3": {"immutable": later_immutable, "patch_fields_immutable": true, "patch_fields": array.concat(v2_2_patch_fields, ["terminationGracePeriodSeconds"])},
}

v2_2_patch_fields := ["serviceAccountName", "volumes", "initContainers", "containers", "imagePullSecrets", "securityContext"]

later_immutable := [
	["runtimeRef", "field is immutable"],
	["initializer", "field is immutable"],
	["trainer", "field is immutable"],
	["activeDeadlineSeconds", "field is immutable"],
]

settings := releases[profile.name]

immutable := settings.immutable

# METADATA
# title: changed
# description: >-
#   A CEL transition rule (self == oldSelf): only when the field is set in the old and the new object,
#   so adding or removing it is not a change.
changed(old, new) if {
	old != null
	new != null
	old != new
}

# METADATA
# title: spec field changed
# description: Invalid when an immutable spec field changes on UPDATE (never in audit).
violation contains v if {
	review.is_update
	some [name, detail] in immutable
	changed(review.get(review.old_object, ["spec", name], null), review.get(review.new_object, ["spec", name], null))
	v := violations.make(sprintf("spec.%s", [name]), "Invalid", detail)
}

patch_fields := settings.patch_fields

patches(obj) := review.array(review.get(obj, ["spec", "runtimePatches"], []))

patch_jobs(patch) := review.array(review.get(patch, ["trainingRuntimeSpec", "template", "spec", "replicatedJobs"], []))

# The job's pod spec, undefined where it is not an object (then none of its fields is set).
pod(job) := spec if {
	spec := job.template.spec.template.spec # undefined where job is not an object
	is_object(spec)
}

new_patches := patches(review.new_object)

old_patches := patches(review.old_object)

old_managers := [object.get({"patch": patch}, ["patch", "manager"], null) | some patch in old_patches]

# METADATA
# title: positions
# description: >-
#   Positions of `keys` (an array, or an object of position to key) by key, built once. Managers and job names
#   are unique (listType=map), so each key maps to its one position; keys that repeat are searched instead,
#   with the same result. Each distinct key is inserted once: OPA can lose a key (["a"]) that shares a hash
#   with one inserted twice ("a").
positions(keys) := {key: [x] | some x, key in keys} if {
	count({key | some key in keys}) == count(keys)
} else := {key: [x | some x, k in keys; k == key] | some key in {k | some k in keys}}

old_patch_positions := positions(old_managers)

# METADATA
# title: job_names
# description: >-
#   The name of each job of `jobs` by position; a job without a name (or not an object) is left out.
job_names(jobs) := {x: name |
	some x, job in jobs
	name := job.name
	name != null
}

# METADATA
# title: patch field changed
# description: >-
#   Invalid when an immutable pod spec field of a runtime patch changes: patches are correlated by manager and
#   their replicated jobs by name (listType=map), as the API server correlates them for transition rules.
#   Equal patches and jobs are passed over whole; each new job finds the old jobs of its name in an index, and
#   only the immutable fields its pod sets are compared.
#   From v2.2, whose runtime patches carry these transition rules.
violation contains v if {
	settings.patch_fields_immutable
	review.is_update
	some i, new_patch in new_patches
	manager := object.get({"patch": new_patch}, ["patch", "manager"], null)
	manager != null
	some k in old_patch_positions[manager]
	old_patch := old_patches[k]
	old_patch != new_patch
	old_jobs := patch_jobs(old_patch)
	old_positions := positions(job_names(old_jobs))
	some j, new_job in patch_jobs(new_patch)
	job_name := new_job.name
	job_name != null
	some x in old_positions[job_name]
	old_job := old_jobs[x]
	old_job != new_job
	old_pod := pod(old_job)
	some name, new_value in object.filter(pod(new_job), patch_fields) # only the fields the new pod sets
	changed(object.get(old_pod, name, null), new_value)
	v := violations.make(sprintf("spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].template.spec.template.spec.%s", [i, j, name]), "Invalid", "field is immutable")
}
