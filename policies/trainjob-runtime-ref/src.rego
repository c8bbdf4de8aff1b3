# METADATA
# title: TrainJob spec.runtimeRef names an existing runtime that its initializers and overrides fit
# description: >-
#   The Trainer webhook's runtime checks, CREATE and UPDATE (and audit): spec.runtimeRef (kind defaulting to
#   ClusterTrainingRuntime, apiGroup to trainer.kubeflow.org) must name TrainingRuntime or ClusterTrainingRuntime of
#   trainer.kubeflow.org (`unsupported runtime: <kind>.<apiGroup>`, or `<kind>` alone for an empty group, as
#   Kubernetes prints a GroupKind); the runtime must exist in data.inventory (a TrainingRuntime in the TrainJob's
#   namespace) with upstream's NotFound text, which names the Kind (`TrainingRuntime.trainer.kubeflow.org "<name>"
#   not found: specified trainingRuntime must be created before the TrainJob is created`; the shared spec's
#   lower-case plural resource is not what upstream prints); a kind with no objects in the inventory is reported as
#   not synced (Internal) instead of claiming the runtime is missing. As upstream, a missing runtime is the only
#   error. Then: spec.initializer.dataset/model need a job dataset-initializer/model-initializer with an
#   (init)container of that name, and (v2.3, kubeflow/trainer#3714) a main container of that name that mounts the
#   volume `initializer` (`must have volumeMount with name - initializer in container <c> of the <job> job`; checked
#   only once the job and container exist; an initContainer's mount does not count; a runtimePatch of that container
#   that adds the mount counts, since upstream validates the merged template); each override entry (v2.0
#   podSpecOverrides, v2.1 podTemplateOverrides, v2.2+ each runtimePatches replicated job) must target an existing
#   job, its initContainer and container overrides must name (init)containers of that job, and containers node,
#   dataset-initializer and model-initializer must not get env. Container names are checked against the runtime
#   template BEFORE the overrides are merged: upstream merges first (strategic merge by name), so a container it
#   lacks is added and never reported; this project does not copy that order. v2.0 reports a targetJob named more
#   than once (Duplicate, detail the quoted name, as Kubernetes prints the value); v2.0/v2.1 also report the
#   container overrides of a missing target (upstream does not `continue`), v2.2+ skip them and use the detail `must
#   not have replicated job that doesn't exist in the runtime job template`. v2.2+ check each patch's manager with
#   apimachinery's IsDomainPrefixedPath at spec.runtimePatches.manager (messages read from apimachinery's validation
#   code). The ClusterTrainingRuntime errors are reported at spec.runtimeRef, not upstream's `spec.RuntimeRef` typo.
#   Where upstream returns one error per job (Duplicate, a missing initContainer or container), at most 100 jobs are
#   named, the first in sorted order, and one more violation counts the rest: targetJobs has no maxItems up to
#   v2.1, and reporting tens of thousands would outlast Gatekeeper's webhook timeout.
# custom:
#   id: trainjob-runtime-ref
#   version: 1.4.3
#   specSection: E2-E5
#   rationale: >-
#     A TrainJob whose runtime is missing, or whose overrides name jobs or containers the runtime lacks, is admitted
#     by the API server and fails later in the controller (or, upstream, silently adds a container). Platform teams
#     that run Gatekeeper in front of (or instead of) the Trainer webhook, audit existing TrainJobs, or test
#     manifests in CI get the same answer the webhook gives, with the runtimes read from Gatekeeper's sync (the
#     bundle's SyncSet).
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
#   inventory:
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: TrainingRuntime}
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: ClusterTrainingRuntime}
package trainertrainjobruntimeref

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.runtime
import data.lib.trainer.violations

# METADATA
# title: releases
# description: >-
#   duplicate_target_check: a targetJob named twice over all override entries is a Duplicate (v2.0 only).
#   initializer_volume_mount_check: a configured initializer's container mounts the volume `initializer` (v2.3,
#   kubeflow/trainer#3714).
releases := {
	"v2.0": {"duplicate_target_check": true, "initializer_volume_mount_check": false},
	"v2.1": {"duplicate_target_check": false, "initializer_volume_mount_check": false},
	"v2.2": {"duplicate_target_check": false, "initializer_volume_mount_check": false},
	"v2.3": {"duplicate_target_check": false, "initializer_volume_mount_check": true},
}

settings := releases[profile.name]

field := sprintf("spec.%s", [profile.override_field])

# METADATA
# title: runtime_patches
# description: >-
#   The TrainJob overrides jobs with runtimePatches (v2.2+, one patch per manager, replicated jobs by name under
#   trainingRuntimeSpec) rather than override entries naming targetJobs (podSpecOverrides, podTemplateOverrides).
runtime_patches if profile.override_field == "runtimePatches"

trainjob := review.new_object

checked if review.applies_to({"CREATE", "UPDATE"})

lookup := runtime.lookup(trainjob)

job_names := runtime.requested_job_names

specified := {"TrainingRuntime": "trainingRuntime", "ClusterTrainingRuntime": "clusterTrainingRuntime"}

# METADATA
# title: runtime missing
# description: >-
#   The runtime cannot be read: an unsupported kind, a kind not synced into data.inventory (said plainly),
#   or not found (upstream's NotFound text). Upstream stops here: no other check of this rule runs.
violation contains v if {
	checked
	not lookup.found
	v := violations.make("spec.runtimeRef", lookup.type, missing_detail)
}

missing_detail := sprintf("%s: specified %s must be created before the TrainJob is created", [lookup.detail, specified[lookup.ref.kind]]) if {
	lookup.reason == "not_found"
} else := lookup.detail

initializers := [{"key": "dataset", "job": "dataset-initializer", "config": "datasetConfig"}, {"key": "model", "job": "model-initializer", "config": "modelConfig"}]

# METADATA
# title: configured_initializers
# description: The initializers that spec.initializer sets (not null), found once for every check that needs them.
configured_initializers := [init |
	some init in initializers
	object.get(trainjob, ["spec", "initializer", init.key], null) != null
]

# METADATA
# title: initializer job missing
# description: Invalid when spec.initializer.dataset (model) is set and the runtime has no job of that name.
violation contains v if {
	checked
	lookup.found
	some init in configured_initializers
	not init.job in job_names
	v := violations.make("spec.runtimeRef", "Invalid", sprintf("must have %s job when trainJob is configured with input %s", [init.job, init.config]))
}

# METADATA
# title: initializer container missing
# description: Invalid when the initializer job has no (init)container of its own name.
violation contains v if {
	checked
	lookup.found
	some init in configured_initializers
	init.job in job_names
	not has_container(init.job, init.job)
	v := violations.make("spec.runtimeRef", "Invalid", sprintf("must have container with name - %s in the %s job", [init.job, init.job]))
}

initializer_volume := "initializer"

# METADATA
# title: initializer volumeMount missing
# description: >-
#   Invalid when the initializer job has its container but the main container of that name does not mount
#   the volume `initializer` (an initContainer's mount does not count; upstream checks main containers only).
#   Checked only once the job and its container exist, as upstream does (v2.3).
violation contains v if {
	settings.initializer_volume_mount_check
	checked
	lookup.found
	some init in configured_initializers
	init.job in job_names
	has_container(init.job, init.job)
	not [init.job, init.job] in mounted_initializer_containers
	v := violations.make("spec.runtimeRef", "Invalid", sprintf("must have volumeMount with name - %s in container %s of the %s job", [initializer_volume, init.job, init.job]))
}

# METADATA
# title: mounted_initializer_containers
# description: >-
#   [job, container] of each main container of the runtime template that mounts `initializer`, or that a
#   runtime patch gives such a mount: upstream validates the template after merging the patches.
mounted_initializer_containers contains [job_name, c] if {
	some job in runtime.requested_jobs
	job_name := object.get(job, "name", null)
	some init in configured_initializers
	job_name == init.job
	some c in mounting_containers(object.get(job, ["template", "spec", "template", "spec", "containers"], []))
}

mounted_initializer_containers contains [job, c] if {
	runtime_patches
	some [job, pod] in patch_targets
	some init in configured_initializers
	job == init.job
	some c in mounting_containers(object.get({"pod": pod}, ["pod", "containers"], []))
}

# METADATA
# title: mounting_containers
# description: Names of the containers in `list` with a volumeMount named `initializer`.
mounting_containers(list) := {name |
	is_array(list)
	some container in list
	mounts := object.get({"container": container}, ["container", "volumeMounts"], [])
	is_array(mounts)
	some mount in mounts
	object.get({"mount": mount}, ["mount", "name"], null) == initializer_volume
	name := object.get({"container": container}, ["container", "name"], null)
}

reserved_containers := {"dataset-initializer", "model-initializer", "node"}

# METADATA
# title: missing_containers
# description: >-
#   [job, list] for each (init)container an override names that the runtime's job lacks (before merging), for both
#   checks below; an item without a name (or not an object) names nothing and is missing. An override entry of one
#   job (in_place_targets): item by item, where the entry carries it, a job the runtime lacks included. A runtime
#   patch (deduped_targets): its distinct pod's names less the job's, as sets. An entry of several jobs (see
#   wide_units): its names intersected with each job's, which looks at the smaller set only, so a pod of thousands
#   of containers that targets thousands of jobs is not compared name by name with each job; the jobs it names that
#   the runtime lacks are absent_missing's.
missing_containers contains [job, list] if {
	not alike
	some [job, pod] in in_place_targets
	known := job_container_names[job] # a job the runtime lacks: below
	some list in ["initContainers", "containers"]
	names := {object.get({"item": item}, ["item", "name"], null) | some item in pod[list]}
	names - known != set()
}

missing_containers contains [job, list] if {
	alike
	some [job, _] in in_place_targets
	known := job_container_names[job]
	alike_names.all - known != set() # a valid target stops here
	some list in ["initContainers", "containers"]
	alike_names[list] - known != set()
}

missing_containers contains [job, list] if {
	absent_jobs != set()
	some [job, pod] in in_place_targets
	absent_jobs[job]
	some list in ["initContainers", "containers"]
	_ = pod[list][_] # the list has an item
}

missing_containers contains [job, list] if {
	some [job, pod] in deduped_targets
	known := job_container_names[job]
	names := pod_names[pod]
	names.all - known != set() # a valid target stops here
	some list in ["initContainers", "containers"]
	names[list] - known != set()
}

missing_containers contains [job, list] if {
	some unit in wide_units
	some list in ["initContainers", "containers"]
	count(unit[list]) > most_known # more names than any job has: every job lacks one
	some job in (unit.jobs & job_names) # the jobs the runtime lacks are absent_missing's, however many
}

missing_containers contains [job, list] if {
	some unit in wide_units
	some list in ["initContainers", "containers"]
	names := unit[list]
	count(names) <= most_known
	some job in (unit.jobs & job_names)
	known := job_container_names[job]
	count(names & known) != count(names)
}

# METADATA
# title: most_known
# description: The most (init)container names one runtime job that a target names has.
most_known := max([count(names) | some names in job_container_names]) if {
	job_container_names != {}
} else := 0

# METADATA
# title: absent_jobs
# description: >-
#   The jobs override entries target that the runtime lacks (v2.0, v2.1: upstream does not `continue` after a
#   missing targetJob, so the entry's container overrides are also reported against the job's empty containers).
#   Runtime patches skip them.
absent_jobs := set() if {
	runtime_patches
} else := missing_jobs

# METADATA
# title: missing_jobs
# description: The jobs the targets name that the runtime lacks.
missing_jobs := target_jobs - job_names

# METADATA
# title: absent_missing
# description: >-
#   The absent jobs that entries of several jobs target and whose pods set `list` (missing_containers finds those of
#   one job): none when no job is absent or no such entry sets the list, all of theirs when every one does (one set,
#   however many jobs: a TrainJob can name tens of thousands), else entry by entry.
absent_missing(list) := set() if {
	absent_jobs == set()
} else := set() if {
	every unit in wide_units {
		unit[list] == set()
	}
} else := absent_jobs & union({unit.jobs | some unit in wide_units}) if {
	every unit in wide_units {
		unit[list] != set()
	}
} else := {job |
	some unit in wide_units
	unit[list] != set()
	some job in (unit.jobs & absent_jobs)
}

container_nouns := {"initContainers": "initContainer", "containers": "container"}

# METADATA
# title: missing_reports
# description: For each list, the jobs it is missing from (see reported).
missing_reports := {list: reported(jobs) |
	some list, _ in container_nouns
	jobs := {job | some [job, missing_list] in missing_containers; missing_list == list} | absent_missing(list)
}

# METADATA
# title: report_limit
# description: >-
#   The most jobs one check names a violation each, the first in sorted order; one more violation counts the rest.
#   targetJobs has no maxItems up to v2.1, so a TrainJob can name tens of thousands of missing or repeated jobs:
#   upstream returns an error for each, but reporting each takes longer than Gatekeeper's webhook timeout, after
#   which the webhook's failure policy admits the request.
report_limit := 100

# METADATA
# title: reported
# description: The first report_limit of `jobs` in sorted order (`named`), and how many are left (`more`).
reported(jobs) := {"named": array.slice(sorted, 0, report_limit), "more": count(sorted) - report_limit} if {
	sorted := sort(jobs)
}

# METADATA
# title: in_place_targets
# description: >-
#   The overrides of one job whose items are read where each is, target by target: override entries (v2.0, v2.1),
#   thousands of small ones in a large TrainJob, each carrying its own pod, so reading each is linear in the request.
#   Collecting their distinct pods first hashed and compared each pod three times, which cost more than reading a
#   few items where no two pods are alike (docs/performance.md, fifth round); where all are alike, see alike.
in_place_targets := [] if {
	runtime_patches
} else := checked_targets

# METADATA
# title: alike
# description: >-
#   Every override of one job overrides one pod (a TrainJob that overrides many jobs alike): its names are then
#   collected once. One comparison per target, and the first pod that differs ends the search.
alike if {
	[_, first] := in_place_targets[0]
	init := object.get(first, "initContainers", null) # the lists are all the checks read of a pod
	main := object.get(first, "containers", null)
	every target in in_place_targets {
		object.get(target[1], "initContainers", null) == init
		object.get(target[1], "containers", null) == main
	}
}

# METADATA
# title: alike_names
# description: The names of the one pod of alike overrides, by list.
alike_names := {"initContainers": init, "containers": main, "all": init | main} if {
	alike
	pod := in_place_targets[0][1]
	init := {n | n := pod.initContainers[_].name} | {null | type_name(pod.initContainers) in {"array", "object"}; count([n | n := pod.initContainers[_].name]) != count(pod.initContainers)}
	main := {n | n := pod.containers[_].name} | {null | type_name(pod.containers) in {"array", "object"}; count([n | n := pod.containers[_].name]) != count(pod.containers)}
}

# METADATA
# title: deduped_targets
# description: >-
#   The overrides of one job whose pods' names are collected once per distinct pod: runtime patches (v2.2+), at most
#   16 x 100 job patches, where one pod of many containers repeated for each job is common.
deduped_targets := checked_targets if {
	runtime_patches
} else := []

# METADATA
# title: pods
# description: The distinct pods of deduped_targets.
pods := {pod | some [_, pod] in deduped_targets}

# METADATA
# title: env_pods
# description: >-
#   The pods the reserved-env check reads: of each override of one job (each distinct pod of runtime patches), and
#   of each entry of several jobs that names a reserved container (the others' items are not read).
env_pods := array.concat(array.concat(in_place_pods, [pod | some pod in pods]), [unit.pod |
	some unit in wide_units
	unit.containers & reserved_containers != set()
])

# METADATA
# title: in_place_pods
# description: The pods of in_place_targets, the one pod once where they are alike.
in_place_pods := [in_place_targets[0][1]] if {
	alike
} else := [pod | some [_, pod] in in_place_targets]

# METADATA
# title: pod_names
# description: >-
#   The (init)container names of each distinct pod, by list and in all (an item without a name, or not an object,
#   names null, which no runtime container has), so that a target is checked by set difference, not item by
#   item. Each pod is inserted as a key once (OPA can lose a key whose hash another key, inserted twice, shares).
pod_names := {pod: names |
	some pod in pods
	init_names := {n | n := pod.initContainers[_].name} | {null | type_name(pod.initContainers) in {"array", "object"}; count([n | n := pod.initContainers[_].name]) != count(pod.initContainers)}
	main_names := {n | n := pod.containers[_].name} | {null | type_name(pod.containers) in {"array", "object"}; count([n | n := pod.containers[_].name]) != count(pod.containers)}
	names := {"initContainers": init_names, "containers": main_names, "all": init_names | main_names}
}

# METADATA
# title: unique_job_names
# description: >-
#   Every job of the runtime template has a name of its own, as in any runtime the API server stored
#   (replicatedJobs is a list map keyed by name): each job's container names can then be indexed by job name.
unique_job_names if count(runtime.requested_job_names) == count(runtime.requested_jobs)

# METADATA
# title: job_container_names
# description: >-
#   The (init)container names of each runtime job that a target or an initializer names, by job name; a runtime's
#   other jobs are passed over. Where job names repeat (a runtime the API server would not store), the jobs of one
#   name pool their containers, gathered by one indexed comprehension (linear, not a search per name).
job_container_names := {job.name: {c |
	some list in ["initContainers", "containers"]
	c := job.template.spec.template.spec[list][_].name # one ref walks the list
} |
	some job in runtime.requested_jobs
	named_jobs[job.name]
} if {
	unique_job_names
} else := {name: names |
	some name in (named_jobs & job_names)
	names := {c |
		some job in runtime.requested_jobs
		job.name == name
		some list in ["initContainers", "containers"]
		c := job.template.spec.template.spec[list][_].name
	}
}

named_jobs := target_jobs | {init.job | some init in configured_initializers}

# METADATA
# title: has_container
# description: The runtime's job `job` has an (init)container named `c` (before merging).
has_container(job, c) if c in job_container_names[job]

entries := list if {
	list := object.get(trainjob, ["spec", profile.override_field], [])
	is_array(list)
} else := []

# METADATA
# title: narrow_targets
# description: >-
#   [job name, pod] for each override of one job, the pod being the object whose initContainers and containers
#   override the job's: runtime patches, or override entries of one named job (the entries of several jobs are
#   wide_units). A pair refers to the request's values (nothing is copied or hashed per target), so every check
#   below reads the pod's lists where they are.
narrow_targets := patch_targets if {
	runtime_patches
} else := override_targets

# METADATA
# title: patch_targets
# description: >-
#   One [job, pod] per replicated-job patch. Patches without trainingRuntimeSpec.template.spec are skipped; a job
#   patch without a pod spec (or one that is not an object) has no containers; a job patch without a name targets
#   the job null.
patch_targets := [[job, pod] |
	some patch in entries
	some job_patch in patch.trainingRuntimeSpec.template.spec.replicatedJobs
	wrapped := {"job": job_patch}
	job := object.get(wrapped, ["job", "name"], null)
	pod := object.get(wrapped, ["job", "template", "spec", "template", "spec"], {})
]

missing_target_detail := "must not have replicated job that doesn't exist in the runtime job template" if {
	runtime_patches
} else := "must not have targetJob that doesn't exist in the runtime job template"

# METADATA
# title: target_jobs
# description: >-
#   The job names the overrides name, each once: of one job each, and of several (an entry's jobs, a set already,
#   joined as sets rather than visited one by one: one entry can name 60,000).
target_jobs := {job | some [job, _] in narrow_targets} | union({unit.jobs | some unit in wide_units})

# METADATA
# title: target_count
# description: How many jobs the overrides name, a job as often as entries name it (an entry's repeats once).
target_count := count(narrow_targets) + sum([count(unit.jobs) | some unit in wide_units])

# METADATA
# title: checked_targets
# description: >-
#   The overrides of one job that the container checks read. Runtime patches: the targets whose job exists (v2.2+
#   skips the container checks of a missing job with `continue`). Override entries of one job: every one, also of a
#   missing job: upstream does not `continue` after a missing targetJob, so that entry's container overrides are
#   also reported against the (empty) containers of the missing job.
checked_targets := [t | some t in narrow_targets; t[0] in job_names] if {
	runtime_patches
} else := narrow_targets

manager_path := "spec.runtimePatches.manager"

subdomain_error := "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

path_error := "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"

managers := [m | runtime_patches; some patch in entries; m := object.get({"patch": patch}, ["patch", "manager"], null); is_string(m)]

# METADATA
# title: checked_managers
# description: >-
#   The distinct managers that the four checks below look at: a manager that one regex shows to be a
#   domain-prefixed path with a valid host of at most 253 characters and a valid path passes all four, so
#   only the others are taken apart check by check.
checked_managers := {m | some m in managers; not well_formed(m)}

well_formed(m) if {
	regex.match(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`, m)
	indexof(m, "/") <= 253
}

# METADATA
# title: manager empty
# description: apimachinery IsDomainPrefixedPath on each patch's manager (the schema's minLength makes this unreachable).
violation contains v if {
	checked
	lookup.found
	"" in managers
	v := violations.make(manager_path, "Required", "")
}

# METADATA
# title: manager not a domain-prefixed path
# description: No `/`, or an empty host or path.
violation contains v if {
	checked
	lookup.found
	some m in checked_managers
	m != ""
	not domain_prefixed(m)
	v := violations.make(manager_path, "Invalid", "must be a domain-prefixed path (such as \"acme.io/foo\")")
}

domain_prefixed(m) if {
	parts := split(m, "/")
	count(parts) >= 2
	parts[0] != ""
	substring(m, count(parts[0]) + 1, -1) != ""
}

host(m) := split(m, "/")[0]

path(m) := substring(m, count(host(m)) + 1, -1)

# METADATA
# title: manager host too long
# description: The host part of the manager is a DNS-1123 subdomain of at most 253 characters.
violation contains v if {
	checked
	lookup.found
	some m in checked_managers
	domain_prefixed(m)
	count(host(m)) > 253
	v := violations.make(manager_path, "Invalid", "must be no more than 253 characters")
}

# METADATA
# title: manager host not a subdomain
# description: The host part of the manager must match the DNS-1123 subdomain regex.
violation contains v if {
	checked
	lookup.found
	some m in checked_managers
	domain_prefixed(m)
	not regex.match(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`, host(m))
	v := violations.make(manager_path, "Invalid", subdomain_error)
}

# METADATA
# title: manager path
# description: The path part of the manager must be HTTP path characters (RFC 3986).
violation contains v if {
	checked
	lookup.found
	some m in checked_managers
	domain_prefixed(m)
	not regex.match(`^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`, path(m))
	v := violations.make(manager_path, "Invalid", path_error)
}

# METADATA
# title: override_targets
# description: >-
#   One [job, pod] per override entry whose targetJobs is one item that has a name, the pod being the entry itself
#   (podSpecOverrides; nothing is copied per entry) or its spec (podTemplateOverrides). Other entries of one or
#   several jobs are wide_units.
override_targets := [[job, pod] |
	some entry in entries
	[target_job] := entry.targetJobs
	job := target_job.name
	pod := entry # the checks read its (init)containers only
] if {
	profile.override_field == "podSpecOverrides"
} else := [[job, pod] |
	some entry in entries
	[target_job] := entry.targetJobs
	job := target_job.name
	pod := object.get(entry, "spec", {})
]

# METADATA
# title: wide_units
# description: >-
#   The override entries whose targetJobs is not one named item (v2.0, v2.1), each with its listed targetJobs, the
#   names they list in order (`named`; an item without a name, or not an object, lists none) and how many items list
#   none (`unnamed`), the jobs they name (a set; an item without a name targets the job null), its pod (the entry
#   itself, podSpecOverrides, or its spec, podTemplateOverrides) and that pod's names by list (an item without a
#   name, or not an object, names null, which no runtime container has). Names are read by one ref walk per list
#   (`list[_].name`, which passes over items without one) and null is added where fewer names than items were
#   found: a call per item (`object.get` on a wrapper), and hashing each distinct item into a set, cost several
#   times as much on an entry of tens of thousands (docs/performance.md, sixth round). Such an entry's pod is read
#   through its unit, never looked up in a set or as a key: that compares it with the one found, and doing so once
#   per target would compare a pod of thousands of containers once for each of thousands of jobs.
wide_units := [] if {
	runtime_patches
} else := [] if {
	count(override_targets) == count(entries) # every entry names one job
} else := [{"listed": listed, "named": named, "unnamed": unnamed, "jobs": jobs, "pod": pod, "initContainers": init, "containers": main} |
	some entry in entries
	is_object(entry)
	not one_named_target(entry)
	listed := object.get(entry, "targetJobs", [])
	type_name(listed) in {"array", "object"}
	count(listed) > 0
	named := [n | n := listed[_].name]
	unnamed := count(listed) - count(named)
	jobs := {n | some n in named} | {null | unnamed > 0}
	pod := wide_pod(entry)
	init := {n | n := pod.initContainers[_].name} | {null | type_name(pod.initContainers) in {"array", "object"}; count([n | n := pod.initContainers[_].name]) != count(pod.initContainers)}
	main := {n | n := pod.containers[_].name} | {null | type_name(pod.containers) in {"array", "object"}; count([n | n := pod.containers[_].name]) != count(pod.containers)}
]

one_named_target(entry) if {
	[target_job] := entry.targetJobs
	_ = target_job.name # any value, false and null too
}

wide_pod(entry) := entry if {
	profile.override_field == "podSpecOverrides"
} else := object.get(entry, "spec", {})

quoted(value) := sprintf("%q", [value]) if is_string(value)

quoted(value) := sprintf("%v", [value]) if not is_string(value)

# METADATA
# title: duplicate_jobs
# description: >-
#   The targetJob names listed more than once over all entries: in two entries (named_twice: sorted, a name's later
#   occurrences follow its first, so one pass finds them; a pairwise search was quadratic, 1,500 repeated targets
#   took minutes), or twice in one entry (repeated_names).
duplicate_jobs := named_twice | repeated_names

named_twice := set() if {
	target_count == count(target_jobs)
} else := {job |
	sorted := sort(array.concat([job | some [job, _] in narrow_targets], [job | some unit in wide_units; some job in unit.jobs]))
	some k, job in sorted
	k > 0
	sorted[k - 1] == job
}

# METADATA
# title: repeated_names
# description: >-
#   The names an entry lists more than once, by one item it repeats or by two items of one name (an item without a
#   name lists null). Only an entry that lists more items than it names jobs is sorted; the sorted list is then
#   compared with itself shifted by one, which finds the repeats in one pass of one comparison per item.
repeated_names contains name if {
	some unit in wide_units
	count(unit.listed) > count(unit.jobs)
	sorted := sort(array.concat(unit.named, [null | unit.unnamed > 0; some _ in numbers.range(1, unit.unnamed)])) # range(1, 0) is [1, 0]
	n := count(sorted)
	before := array.slice(sorted, 0, n - 1)
	some k, name in array.slice(sorted, 1, n)
	name == before[k]
}

# METADATA
# title: duplicate target
# description: Duplicate (value the name) for every targetJob name seen before, over all entries (v2.0).
violation contains v if {
	settings.duplicate_target_check
	checked
	lookup.found
	some job in duplicate_report.named
	v := violations.make(field, "Duplicate", quoted(job))
}

# METADATA
# title: more duplicate targets
# description: One Duplicate that counts the repeated names beyond report_limit (v2.0).
violation contains v if {
	settings.duplicate_target_check
	checked
	lookup.found
	duplicate_report.more > 0
	v := violations.make(field, "Duplicate", sprintf("%d more targetJob names listed more than once (the first %d are named)", [duplicate_report.more, report_limit]))
}

duplicate_report := reported(duplicate_jobs)

# METADATA
# title: target missing
# description: Invalid when an override targets a job the runtime does not have.
violation contains v if {
	checked
	lookup.found
	missing_jobs != set() # one violation, however many jobs are missing (not one evaluation per job)
	v := violations.make(field, "Invalid", missing_target_detail)
}

# METADATA
# title: container missing
# description: >-
#   Invalid when an initContainer (container) override names no (init)container of the runtime's job (before
#   merging), one violation per job.
violation contains v if {
	checked
	lookup.found
	some list, noun in container_nouns
	some job in missing_reports[list].named
	v := violations.make(field, "Invalid", sprintf("must not have %s that doesn't exist in the runtime job %v", [noun, job]))
}

# METADATA
# title: more containers missing
# description: One Invalid that counts the jobs beyond report_limit that an (init)container override does not fit.
violation contains v if {
	checked
	lookup.found
	some list, noun in container_nouns
	more := missing_reports[list].more
	more > 0
	v := violations.make(field, "Invalid", sprintf("must not have %s that doesn't exist in the runtime job: %d more jobs (the first %d are named)", [noun, more, report_limit]))
}

# METADATA
# title: reserved envs
# description: Invalid when a container override sets env on dataset-initializer, model-initializer or node.
violation contains v if {
	checked
	lookup.found
	some pod in env_pods
	some container in pod.containers
	reserved_containers[container.name] # undefined, like a missing name, where the item is not an object
	_ = container.env[0] # env is a list, not empty
	v := violations.make(field, "Invalid", "must not have envs for the dataset-initializer, model-initializer, node containers")
}
