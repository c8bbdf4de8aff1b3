# METADATA
# title: PodSets of a TrainJob
# description: >-
#   What a TrainJob will request, computed the Trainer's way: one PodSet per replicated job of its
#   runtime with a count (parallelism; the trainer job from numNodes; MPI's node job with the launcher as
#   a node) and the per-Pod requests of Kubernetes' pod request formula (app containers plus sidecars, or
#   the largest init container, plus overhead; limits stand in for missing requests;
#   spec.trainer.resourcesPerNode on the node containers). Quantities are exact integers of nano-units
#   (lib.trainer.nanos). The same model as generator/podsets/model.py; docs/podsets.md explains it.
package lib.trainer.podsets

import data.lib.trainer.nanos
import data.lib.trainer.review

ancestor_label := "trainer.kubeflow.org/trainjob-ancestor-step"

api_group := "trainer.kubeflow.org"

api_version := "trainer.kubeflow.org/v1alpha1"

resources_per_node_path := "spec.trainer.resourcesPerNode"

# METADATA
# title: ref
# description: >-
#   The TrainJob's runtimeRef with upstream's defaults: kind ClusterTrainingRuntime, apiGroup
#   trainer.kubeflow.org (absent or null).
ref(trainjob) := {
    "name": review.get(trainjob, ["spec", "runtimeRef", "name"], ""),
    "kind": defaulted(review.get(trainjob, ["spec", "runtimeRef", "kind"], null), "ClusterTrainingRuntime"),
    "apiGroup": defaulted(review.get(trainjob, ["spec", "runtimeRef", "apiGroup"], null), api_group),
}

defaulted(null, fallback) := fallback

defaulted(value, _) := value if value != null

# METADATA
# title: runtime
# description: >-
#   The referenced runtime from data.inventory: {"found": true, "runtime": <object>} or
#   {"found": false, "type": <field.Error type>, "detail": <why>}. A TrainingRuntime is looked up in the
#   TrainJob's namespace, a ClusterTrainingRuntime cluster-wide; kinds that are not synced at all are said so.
runtime(inventory, trainjob) := {"found": true, "runtime": found} if {
    found := lookup(inventory, trainjob, ref(trainjob))
} else := {"found": false, "type": missing[0], "detail": missing[1]} if {
    missing := missing_reason(inventory, ref(trainjob))
}

lookup(inventory, trainjob, r) := found if {
    r.apiGroup == api_group
    r.kind == "TrainingRuntime"
    namespace := review.get(trainjob, ["metadata", "namespace"], "")
    found := review.get(inventory, ["namespace", namespace, api_version, "TrainingRuntime", r.name], null)
    is_object(found)
}

lookup(inventory, _, r) := found if {
    r.apiGroup == api_group
    r.kind == "ClusterTrainingRuntime"
    found := review.get(inventory, ["cluster", api_version, "ClusterTrainingRuntime", r.name], null)
    is_object(found)
}

missing_reason(inventory, r) := ["Invalid", sprintf("unsupported runtime: %v.%v", [r.kind, r.apiGroup])] if {
    not supported(r)
} else := ["Internal", sprintf("%s objects are not synced into Gatekeeper's inventory, so the runtime cannot be read", [r.kind])] if {
    not synced(inventory, r.kind)
} else := ["Invalid", sprintf("%s.%s %q not found", [lower(concat("", [r.kind, "s"])), api_group, sprintf("%v", [r.name])])]

supported(r) if {
    r.apiGroup == api_group
    r.kind in {"TrainingRuntime", "ClusterTrainingRuntime"}
}

synced(inventory, "ClusterTrainingRuntime") if is_object(review.get(inventory, ["cluster", api_version, "ClusterTrainingRuntime"], null))

synced(inventory, "TrainingRuntime") if {
    some tree in review.get(inventory, ["namespace"], {})
    is_object(review.get(tree, [api_version, "TrainingRuntime"], null))
}

# METADATA
# title: compute
# description: >-
#   {"podSets": [{name, ancestor, count, containers, initContainers, singlePodRequests, trainerNode}],
#   "totalRequests", "pods", "trainerNodes", "invalid"}; requests in nano-units, `invalid` the sorted paths
#   of values that are not quantities (they count as absent).
compute(trainjob, runtime) := {
    "podSets": [entry.podSet | some entry in entries],
    "totalRequests": sum_counted(entries),
    "pods": sum([entry.podSet.count | some entry in entries]),
    "trainerNodes": sum([entry.podSet.count | some entry in entries; entry.podSet.trainerNode]),
    "invalid": sort({path | some entry in entries; some path in entry.invalid}),
} if {
    p := policy(runtime)
    jobs := review.array(review.get(runtime, ["spec", "template", "spec", "replicatedJobs"], []))
    num_nodes := integer_or_null(review.get(trainjob, ["spec", "trainer", "numNodes"], null))
    rpn := resources_per_node(trainjob)
    entries := [pod_set(i, job, p, count_of(i, jobs, p, num_nodes), rpn) | some i, job in jobs]
}

policy(runtime) := {
    "hasMLPolicy": is_object(ml),
    "torch": is_object(review.get(ml, ["torch"], null)),
    "mpi": is_object(review.get(ml, ["mpi"], null)),
    "launcherAsNode": launcher_as_node(ml),
    "runtimeNumNodes": runtime_num_nodes(ml),
} if {
    ml := review.get(runtime, ["spec", "mlPolicy"], null)
}

launcher_as_node(ml) if {
    is_object(review.get(ml, ["mpi"], null))
    review.get(ml, ["mpi", "runLauncherAsNode"], null) == true
} else := false

runtime_num_nodes(ml) := n if {
    n := integer_or_null(review.get(ml, ["numNodes"], null))
    n != null
    n != 0
} else := 1

integer_or_null(value) := value if {
    is_number(value)
    floor(value) == value
} else := null

name_of(value) := name if {
    name := review.get(value, ["name"], "")
    is_string(name)
} else := ""

ancestor(job) := value if {
    value := review.get(job, ["template", "metadata", "labels", ancestor_label], null)
    is_string(value)
} else := null

parallelism(job) := n if {
    n := integer_or_null(review.get(job, ["template", "spec", "parallelism"], null))
    n != null
} else := 1

base_count(job, p) := max([p.runtimeNumNodes, 1]) if {
    ancestor(job) == "trainer"
    p.hasMLPolicy
} else := max([parallelism(job), 1])

first_trainer(jobs) := min({i | some i, job in jobs; ancestor(job) == "trainer"})

first_node(jobs) := min({i | some i, job in jobs; name_of(job) == "node"})

# MPI's plugin sets the node job; Torch's and plain runtimes' set the first trainer job (spec.trainer.numNodes).
count_of(i, jobs, p, num_nodes) := max([mpi_count(p, num_nodes), 1]) if {
    num_nodes != null
    p.mpi
    i == first_node(jobs)
} else := max([num_nodes, 1]) if {
    num_nodes != null
    torch_or_plain(p)
    i == first_trainer(jobs)
} else := base_count(jobs[i], p)

torch_or_plain(p) if p.torch

torch_or_plain(p) if not p.mpi

mpi_count(p, num_nodes) := max([num_nodes - 1, 1]) if p.launcherAsNode

mpi_count(p, num_nodes) := num_nodes if not p.launcherAsNode

resources_per_node(trainjob) := rpn if {
    rpn := review.get(trainjob, ["spec", "trainer", "resourcesPerNode"], null)
    is_object(rpn)
    some key in ["limits", "requests"]
    review.get(rpn, [key], null) != null
} else := null

# Containers of a job whose resources spec.trainer.resourcesPerNode replaces.
replaced(job, p, rpn) := {"node", "launcher"} if {
    rpn != null
    p.launcherAsNode
    node_job(job, p)
} else := {"node"} if {
    rpn != null
    ancestor(job) == "trainer"
} else := set()

node_job(job, _) if ancestor(job) == "trainer"

node_job(job, p) if {
    p.mpi
    name_of(job) == "node"
}

pod_set(i, job, p, count, rpn) := {
    "podSet": {
        "name": name_of(job),
        "ancestor": ancestor(job),
        "count": count,
        "containers": [name_of(c) | some c in containers],
        "initContainers": [name_of(c) | some c in inits],
        "singlePodRequests": pod_requests(app_requests, init_requests, inits, overhead),
        "trainerNode": is_node_job(job, p),
    },
    "invalid": app_invalid | init_invalid | overhead_invalid,
} if {
    path := sprintf("spec.template.spec.replicatedJobs[%d].template.spec.template.spec", [i])
    pod_spec := review.get(job, ["template", "spec", "template", "spec"], {})
    containers := review.array(review.get(pod_spec, ["containers"], []))
    inits := review.array(review.get(pod_spec, ["initContainers"], []))
    names := replaced(job, p, rpn)
    app_requests := [effective(resources_of(c, true, names, rpn)) | some c in containers]
    init_requests := [effective(resources_of(c, false, names, rpn)) | some c in inits]
    app_invalid := {x |
        some j, c in containers
        some x in invalid(resources_of(c, true, names, rpn), where(c, true, names, sprintf("%s.containers[%d]", [path, j])))
    }
    init_invalid := {x |
        some j, c in inits
        some x in invalid(resources_of(c, false, names, rpn), where(c, false, names, sprintf("%s.initContainers[%d]", [path, j])))
    }
    overhead_values := object_or_empty(review.get(pod_spec, ["overhead"], {}))
    overhead := {name: n | some name, value in overhead_values; n := nanos.parse(value)}
    overhead_invalid := {sprintf("%s.overhead[%s]", [path, name]) | some name, value in overhead_values; not nanos.parse(value)}
}

is_node_job(job, p) if {
    node_job(job, p)
} else := false

resources_of(container, true, names, rpn) := rpn if name_of(container) in names

resources_of(container, app, names, _) := review.get(container, ["resources"], null) if not replaced_container(container, app, names)

replaced_container(container, true, names) if name_of(container) in names

where(container, app, names, _) := resources_per_node_path if replaced_container(container, app, names)

where(container, app, names, prefix) := concat(".", [prefix, "resources"]) if not replaced_container(container, app, names)

object_or_empty(value) := value if is_object(value)

object_or_empty(value) := {} if not is_object(value)

requests_of(resources) := object_or_empty(review.get(resources, ["requests"], {}))

limits_of(resources) := object_or_empty(review.get(resources, ["limits"], {}))

# Requests, plus limits of the resources without a request (the API server defaults requests to limits).
effective(resources) := object.union(
    {name: n | some name, value in limits_of(resources); not has_key(requests_of(resources), name); n := nanos.parse(value)},
    {name: n | some name, value in requests_of(resources); n := nanos.parse(value)},
)

invalid(resources, base) := {sprintf("%s.requests[%s]", [base, name]) |
    some name, value in requests_of(resources)
    not nanos.parse(value)
} | {sprintf("%s.limits[%s]", [base, name]) |
    some name, value in limits_of(resources)
    not has_key(requests_of(resources), name)
    not nanos.parse(value)
}

has_key(obj, key) if _ = obj[key]

sidecar(container) if review.get(container, ["restartPolicy"], null) == "Always"

# Kubernetes' PodRequests: app containers and sidecars run together; an init container runs with the
# sidecars started before it; the Pod needs the larger of the two per resource, plus overhead.
pod_requests(app_requests, init_requests, inits, overhead) := add_all([max_all([app, init]), overhead]) if {
    sidecars := [init_requests[k] | some k, c in inits; sidecar(c)]
    app := add_all(array.concat(app_requests, sidecars))
    init := max_all([init_candidate(k, init_requests, inits) | some k, _ in inits])
}

init_candidate(k, init_requests, inits) := add_all([init_requests[j] | some j, c in inits; j <= k; sidecar(c)]) if {
    sidecar(inits[k])
}

init_candidate(k, init_requests, inits) := add_all(array.concat(
    [init_requests[k]],
    [init_requests[j] | some j, c in inits; j < k; sidecar(c)],
)) if {
    not sidecar(inits[k])
}

add_all(lists) := {name: sum([v | some l in lists; v := l[name]]) | some l in lists; some name, _ in l}

max_all(lists) := {name: max([v | some l in lists; v := l[name]]) | some l in lists; some name, _ in l}

sum_counted(entries) := {name: sum([n | some entry in entries; v := entry.podSet.singlePodRequests[name]; n := v * entry.podSet.count]) |
    some entry in entries
    some name, _ in entry.podSet.singlePodRequests
}
