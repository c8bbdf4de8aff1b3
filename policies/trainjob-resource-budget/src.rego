# METADATA
# title: A TrainJob's total requests, trainer nodes and Pods stay within a budget
# description: >-
#   On CREATE, UPDATE and in audit, the TrainJob's PodSets are computed as the Trainer computes them from its
#   runtime (read from data.inventory): per-Pod requests by Kubernetes' pod request formula (limits stand in for
#   missing requests; spec.trainer.resourcesPerNode on the node containers) times each PodSet's count. The total per
#   resource must not exceed maxTotal, the trainer nodes maxTrainerNodes, the Pods (a gang scheduler's minMember)
#   maxPods; namespaces[<ns>] replaces any of them for one namespace. Quantities compare exactly. With no limit set
#   nothing is checked; when limits are set, a runtime that cannot be read or a value that is not a quantity is a
#   violation (fail closed).
# custom:
#   id: trainjob-resource-budget
#   version: 1.2.5
#   specSection: F
#   rationale: >-
#     Platform teams need to know how many GPUs a TrainJob will hold before it starts: no team should start a 64-GPU
#     job by accident. The Trainer models every TrainJob as PodSets and gang schedulers take minMember and
#     minResources from them, so the budget uses exactly that model (docs/podsets.md).
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
#   parameters:
#     - name: maxTotal
#       description: >-
#         Maximum total request per resource name (cpu, memory, nvidia.com/gpu, any extended resource), as a
#         Kubernetes quantity.
#       default: {}
#       schema: {type: object, additionalProperties: {x-kubernetes-int-or-string: true}}
#     - name: maxTrainerNodes
#       description: Maximum trainer nodes (numNodes) of a TrainJob.
#       schema: {type: integer, minimum: 0}
#     - name: maxPods
#       description: Maximum Pods of a TrainJob over all its PodSets (minMember).
#       schema: {type: integer, minimum: 0}
#     - name: namespaces
#       description: >-
#         Per-namespace limits: namespaces[<ns>] has maxTotal, maxTrainerNodes and maxPods; each one set replaces
#         the default for that namespace (maxTotal per resource name).
#       default: {}
#       schema:
#         type: object
#         additionalProperties:
#           type: object
#           properties:
#             maxTotal:
#               type: object
#               additionalProperties:
#                 x-kubernetes-int-or-string: true
#             maxTrainerNodes:
#               type: integer
#               minimum: 0
#             maxPods:
#               type: integer
#               minimum: 0
#   inventory:
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: ClusterTrainingRuntime}
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: TrainingRuntime}
package trainertrainjobresourcebudget

import data.lib.trainer.nanos
import data.lib.trainer.podsets
import data.lib.trainer.review
import data.lib.trainer.runtime
import data.lib.trainer.violations

evaluated if review.applies_to({"CREATE", "UPDATE"})

trainjob := review.new_object

namespace := review.get(trainjob, ["metadata", "namespace"], "")

parameters := p if {
	p := input.parameters
	is_object(p)
} else := {}

namespace_limits := review.get(parameters, ["namespaces", namespace], {})

# METADATA
# title: resource_limits
# description: Limit per resource name, {"value", "namespace"}; a namespace's own limit replaces the default.
resource_limits[name] := {"value": value, "namespace": ""} if {
	some name, value in podsets.object_or_empty(review.get(parameters, ["maxTotal"], {}))
	not podsets.has_key(podsets.object_or_empty(review.get(namespace_limits, ["maxTotal"], {})), name)
}

resource_limits[name] := {"value": value, "namespace": namespace} if {
	some name, value in podsets.object_or_empty(review.get(namespace_limits, ["maxTotal"], {}))
}

count_limit(key) := {"value": value, "namespace": namespace} if {
	value := review.get(namespace_limits, [key], null)
	is_number(value)
} else := {"value": value, "namespace": ""} if {
	value := review.get(parameters, [key], null)
	is_number(value)
}

configured if count(resource_limits) > 0

configured if count_limit("maxTrainerNodes")

configured if count_limit("maxPods")

lookup := runtime.lookup(trainjob)

computed := podsets.compute(trainjob, runtime.requested) if lookup.found

of_namespace(limit) := sprintf(" of namespace %s", [limit.namespace]) if limit.namespace != ""

of_namespace(limit) := "" if limit.namespace == ""

# METADATA
# title: runtime unavailable
# description: The referenced runtime is unsupported, not found, or its kind is not synced (fail closed).
violation contains v if {
	evaluated
	configured
	not lookup.found
	v := violations.make("spec.runtimeRef", lookup.type, sprintf("cannot compute the TrainJob's resources: %s", [lookup.detail]))
}

# METADATA
# title: not a quantity
# description: A request, limit or overhead that is not a Kubernetes quantity (fail closed).
violation contains v if {
	evaluated
	configured
	some path in computed.invalid
	v := invalid_quantity(path)
}

invalid_quantity(path) := violations.make(podsets.resources_per_node_path, "Invalid", sprintf("cannot compute the TrainJob's resources: %s is not a Kubernetes quantity", [path])) if {
	startswith(path, podsets.resources_per_node_path)
}

invalid_quantity(path) := violations.make("spec.runtimeRef", "Invalid", sprintf("cannot compute the TrainJob's resources: %s of runtime %v is not a Kubernetes quantity", [path, lookup.ref.name])) if {
	not startswith(path, podsets.resources_per_node_path)
}

# METADATA
# title: limit not a quantity
# description: A maxTotal limit of the Constraint that is not a Kubernetes quantity (fail closed).
violation contains v if {
	evaluated
	some name, limit in resource_limits
	not nanos.parse(limit.value)
	v := violations.make("spec", "Internal", sprintf("the limit %v for %s%s in the Constraint is not a Kubernetes quantity", [limit.value, name, of_namespace(limit)]))
}

# METADATA
# title: resource over budget
# description: Forbidden per resource whose total request (per-Pod requests x count, over all PodSets) is over its limit.
violation contains v if {
	evaluated
	some name, limit in resource_limits
	maximum := nanos.parse(limit.value)
	total := object.get(computed.totalRequests, name, 0)
	over(total, maximum)
	v := violations.make("spec", "Forbidden", sprintf("total %s requests %s exceed the limit %v%s%s", [name, nanos.describe(total), limit.value, of_namespace(limit), unsure(maximum)]))
}

# A limit of at least nanos.beyond (e.g. `1e99999` for "unlimited") admits every total below it; a total
# that is beyond it too cannot be compared exactly, so it is denied (fail closed) and the message says why.
over(total, maximum) if {
	maximum < nanos.beyond
	total > maximum
}

over(total, maximum) if {
	maximum >= nanos.beyond
	total >= nanos.beyond
}

unsure(maximum) := sprintf(" (both are at least %s, beyond exact comparison)", [nanos.beyond_text]) if {
	maximum >= nanos.beyond
} else := ""

# METADATA
# title: trainer nodes over budget
# description: Forbidden when the trainer nodes (numNodes as the runtime applies it) are over maxTrainerNodes.
violation contains v if {
	evaluated
	limit := count_limit("maxTrainerNodes")
	computed.trainerNodes > limit.value
	v := violations.make("spec.trainer.numNodes", "Forbidden", sprintf("%v trainer nodes exceed the limit %v%s", [computed.trainerNodes, limit.value, of_namespace(limit)]))
}

# METADATA
# title: pods over budget
# description: Forbidden when the Pods of all PodSets (a gang scheduler's minMember) are over maxPods.
violation contains v if {
	evaluated
	limit := count_limit("maxPods")
	computed.pods > limit.value
	v := violations.make("spec", "Forbidden", sprintf("%v pods (the gang's minMember) exceed the limit %v%s", [computed.pods, limit.value, of_namespace(limit)]))
}
