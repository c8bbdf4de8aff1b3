# METADATA
# title: PodSets of a TrainJob
# description: >-
#   What a TrainJob will request, computed the Trainer's way: one PodSet per replicated job of its
#   runtime with a count (parallelism; the trainer job from numNodes; MPI's node job with the launcher as
#   a node) and the per-Pod requests of Kubernetes' pod request formula (app containers plus sidecars, or
#   the largest init container, plus overhead; limits stand in for missing requests;
#   spec.trainer.resourcesPerNode on the node containers). Quantities are exact integers of nano-units
#   (lib.trainer.nanos). The same model as generator/kubeflow_trainer_policy/podsets/model.py; docs/podsets.md explains it.
package lib.trainer.podsets

import data.lib.trainer.nanos
import data.lib.trainer.review

ancestor_label := "trainer.kubeflow.org/trainjob-ancestor-step"

resources_per_node_path := "spec.trainer.resourcesPerNode"

# METADATA
# title: compute
# description: >-
#   {"podSets": [{name, ancestor, count, containers, initContainers, singlePodRequests, trainerNode}],
#   "totalRequests", "pods", "trainerNodes", "invalid"}; requests in nano-units, `invalid` the sorted paths
#   of values that are not quantities (they count as absent).
compute(trainjob, runtime) := {
	"podSets": [entry.podSet | some entry in entries],
	"totalRequests": sum_counted(entries),
	"pods": nanos.total([entry.podSet.count | some entry in entries]),
	"trainerNodes": nanos.total([entry.podSet.count | some entry in entries; entry.podSet.trainerNode]),
	"invalid": sort({path | some entry in entries; some path in entry.invalid}),
} if {
	p := policy(runtime)
	jobs := review.array(review.get(runtime, ["spec", "template", "spec", "replicatedJobs"], []))
	infos := [job_info(job, p) | some job in jobs]
	num_nodes := integer_or_null(review.get(trainjob, ["spec", "trainer", "numNodes"], null))
	firsts := {
		"trainer": first({i | some i, info in infos; info.ancestor == "trainer"}),
		"node": first({i | some i, info in infos; info.name == "node"}),
	}
	rpn := resources_per_node(trainjob)
	entries := [pod_set(i, jobs[i], info, count_of(i, info, firsts, p, num_nodes), p, rpn) | some i, info in infos]
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

first(indices) := min(indices) if {
	count(indices) > 0
} else := -1

name_of(value) := name if {
	is_object(value)
	name := object.get(value, "name", "")
	is_string(name)
} else := ""

# What the counts and resourcesPerNode depend on, read once per job.
job_info(job, p) := {
	"name": name,
	"ancestor": ancestor,
	"baseCount": base_count(ancestor, job, p),
	"nodeJob": node_job(name, ancestor, p),
} if {
	name := name_of(job)
	ancestor := ancestor_of(job)
}

ancestor_of(job) := value if {
	value := review.get(job, ["template", "metadata", "labels", ancestor_label], null)
	is_string(value)
} else := null

base_count(ancestor, job, p) := max([p.runtimeNumNodes, 1]) if {
	ancestor == "trainer"
	p.hasMLPolicy
} else := max([parallelism(job), 1])

parallelism(job) := n if {
	n := integer_or_null(review.get(job, ["template", "spec", "parallelism"], null))
	n != null
} else := 1

node_job(name, ancestor, p) if {
	ancestor == "trainer"
} else if {
	p.mpi
	name == "node"
} else := false

# MPI's plugin sets the node job; Torch's and plain runtimes' set the first trainer job (spec.trainer.numNodes).
count_of(i, info, firsts, p, num_nodes) := max([mpi_count(p, num_nodes), 1]) if {
	num_nodes != null
	p.mpi
	i == firsts.node
} else := max([num_nodes, 1]) if {
	num_nodes != null
	torch_or_plain(p)
	i == firsts.trainer
} else := info.baseCount

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
replaced(info, p, rpn) := set() if {
	rpn == null
} else := {"node", "launcher"} if {
	p.launcherAsNode
	info.nodeJob
} else := {"node"} if {
	info.ancestor == "trainer"
} else := set()

pod_set(i, job, info, count, p, rpn) := {
	"podSet": {
		"name": info.name,
		"ancestor": info.ancestor,
		"count": count,
		"containers": [c.name | some c in app],
		"initContainers": [c.name | some c in init],
		"singlePodRequests": pod_requests(app, init, overhead.requests),
		"trainerNode": info.nodeJob,
	},
	"invalid": (({x | some x in invalid_paths(i, "containers", app)} | {x | some x in invalid_paths(i, "initContainers", init)}) | {sprintf("%s.overhead[%s]", [pod_path(i), name]) | some [_, name] in overhead.invalid}),
} if {
	pod_spec := review.get(job, ["template", "spec", "template", "spec"], {})
	names := replaced(info, p, rpn)
	app := [container(c, names, rpn) | some c in review.array(review.get(pod_spec, ["containers"], []))]
	init := [container(c, set(), null) | some c in review.array(review.get(pod_spec, ["initContainers"], []))]
	overhead := quantities(review.get(pod_spec, ["overhead"], {}), "overhead")
}

pod_path(i) := sprintf("spec.template.spec.replicatedJobs[%d].template.spec.template.spec", [i])

invalid_paths(i, list, containers) := {sprintf("%s.%s[%s]", [where, kind, name]) |
	some j, c in containers
	some [kind, name] in c.invalid
	where := container_path(i, list, j, c.replaced)
}

container_path(_, _, _, true) := resources_per_node_path

container_path(i, list, j, false) := sprintf("%s.%s[%d].resources", [pod_path(i), list, j])

# One container: its name, whether it is a sidecar, its effective requests (requests, plus limits of the
# resources without a request: the API server defaults requests to limits) and the values that are not
# quantities ([kind, resource name]). Builtins only past the object check: this runs for every container.
container(c, _, _) := {"name": "", "sidecar": false, "replaced": false, "requests": {}, "invalid": set()} if {
	not is_object(c)
}

container(c, names, rpn) := {
	"name": name,
	"sidecar": object.get(c, "restartPolicy", null) == "Always",
	"replaced": replaced_by_rpn,
	"requests": object.union(
		{name: n | some name, value in limits; not name in requested; n := nanos.parse(value)},
		{name: n | some name, value in requests; n := nanos.parse(value)},
	),
	"invalid": ({["requests", name] | some name, value in requests; not nanos.parse(value)} | {["limits", name] |
		some name, value in limits
		not name in requested
		not nanos.parse(value)
	}),
} if {
	is_object(c)
	name := name_of(c)
	replaced_by_rpn := name in names
	resources := resources_of(c, replaced_by_rpn, rpn)
	requests := field_object(resources, "requests")
	limits := field_object(resources, "limits")
	requested := object.keys(requests)
}

resources_of(_, true, rpn) := rpn

resources_of(c, false, _) := object.get(c, "resources", null)

field_object(value, key) := found if {
	is_object(value)
	found := object.get(value, key, {})
	is_object(found)
} else := {}

object_or_empty(value) := value if {
	is_object(value)
} else := {}

# {"requests": {name: nanos}, "invalid": {[kind, name]}} of a ResourceList (the Pod's overhead).
# `k := kind` binds the argument in the body: the type checker of OPA 1.4.2 to 1.10.0 (Gatekeeper 3.20, 3.21)
# refuses a comprehension head that uses an argument no body expression uses (OPA issue 5234).
quantities(list, kind) := {
	"requests": {name: n | some name, value in values; n := nanos.parse(value)},
	"invalid": {[k, name] | some name, value in values; not nanos.parse(value); k := kind},
} if {
	values := object_or_empty(list)
}

has_key(obj, key) if _ = obj[key]

# Kubernetes' PodRequests: app containers and sidecars run together; an init container runs with the
# sidecars started before it; the Pod needs the larger of the two per resource, plus overhead.
pod_requests(app, init, overhead) := add_all([max_all([running, init_peak]), overhead]) if {
	running := add_all(array.concat([c.requests | some c in app], [c.requests | some c in init; c.sidecar]))
	init_peak := max_all([init_candidate(k, init) | some k, _ in init])
}

init_candidate(k, init) := add_all([c.requests | some j, c in init; j <= k; c.sidecar]) if {
	init[k].sidecar
}

init_candidate(k, init) := add_all(array.concat([init[k].requests], before)) if {
	not init[k].sidecar
	before := [c.requests | some j, c in init; j < k; c.sidecar]
}

add_all(lists) := {name: nanos.total([v | some l in lists; v := l[name]]) | some name in names_of(lists)}

max_all(lists) := {name: max([v | some l in lists; v := l[name]]) | some name in names_of(lists)}

names_of(lists) := {name | some l in lists; some name, _ in l}

# Per resource: the sum over PodSets of per-Pod requests x count.
sum_counted(entries) := {name: nanos.total([n | some [r, n] in counted; r == name]) | some name in {r | some [r, _] in counted}} if {
	counted := [[name, v * entry.podSet.count] | some entry in entries; some name, v in entry.podSet.singlePodRequests]
}
