"""PodSets of a TrainJob and its runtime: what every Pod it creates requests, and how many of them there are.

The same model as the Rego lib `lib.trainer.podsets` (tests keep the two equal), read from kubeflow/trainer
v2.0-v2.3 (`pkg/runtime/core/trainingruntime.go` newRuntimeInfo, `pkg/runtime/runtime.go` WithPodSet, the
Torch, PlainML and MPI plugins' EnforceMLPolicy, the JobSet plugin's builder) and Kubernetes' pod request
formula (`k8s.io/component-helpers/resource` PodRequests):

- One PodSet per replicated job of the runtime, in template order.
- count: the job's `parallelism` (default 1); a `trainer`-ancestor job of a runtime with an `mlPolicy` starts
  at `mlPolicy.numNodes` (default 1); minimum 1. Then `spec.trainer.numNodes`, when set, replaces the count of
  the first `trainer`-ancestor PodSet (Torch and plain runtimes), or, for MPI runtimes, of the first PodSet
  named `node` (`max(numNodes-1, 1)` when `runLauncherAsNode`: the launcher is a node).
- per-Pod requests: the sum over app containers and restartable init containers (sidecars), or the largest
  init container (plus the sidecars started before it) if that is larger, per resource, plus `overhead`.
  A container's requests are its `resources.requests`, and its `resources.limits` for resources it does not
  request (the API server defaults requests to limits). `spec.trainer.resourcesPerNode` replaces the
  resources of the containers named `node` of `trainer`-ancestor jobs (and, for MPI with `runLauncherAsNode`,
  of the job named `node`, and containers named `launcher`): what the Pods get in every Trainer release.
- Overrides (podSpecOverrides, podTemplateOverrides, runtimePatches) cannot set resources or overhead in any
  release, so the model is the same in every profile.
- total = sum of per-Pod requests x count; pods (a gang scheduler's minMember) = sum of counts; trainer nodes =
  sum of the counts of `trainer`-ancestor PodSets and, for MPI runtimes, of PodSets named `node`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeflow_trainer_policy.podsets.quantity import describe_nanos, parse_nanos

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
NODE = "node"
LAUNCHER = "launcher"
RESOURCES_PER_NODE = "spec.trainer.resourcesPerNode"

Resources = dict[str, int]
"""Resource name -> quantity in nano-units."""


@dataclass(frozen=True)
class PodSet:
    name: str
    ancestor: str | None
    count: int
    containers: tuple[str, ...]
    init_containers: tuple[str, ...]
    single_pod_requests: Resources
    trainer_node: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ancestor": self.ancestor,
            "count": self.count,
            "containers": list(self.containers),
            "initContainers": list(self.init_containers),
            "singlePodRequests": dict(self.single_pod_requests),
            "trainerNode": self.trainer_node,
        }


@dataclass(frozen=True)
class PodSets:
    pod_sets: tuple[PodSet, ...]
    invalid: tuple[str, ...] = ()
    """Paths of values that are not Kubernetes quantities (they count as absent)."""
    total_requests: Resources = field(init=False)
    pods: int = field(init=False)
    trainer_nodes: int = field(init=False)

    def __post_init__(self) -> None:
        total: Resources = {}
        for ps in self.pod_sets:
            for name, nanos in ps.single_pod_requests.items():
                total[name] = total.get(name, 0) + nanos * ps.count
        object.__setattr__(self, "total_requests", total)
        object.__setattr__(self, "pods", sum(ps.count for ps in self.pod_sets))
        object.__setattr__(self, "trainer_nodes", sum(ps.count for ps in self.pod_sets if ps.trainer_node))

    def as_json(self) -> dict[str, Any]:
        """The shape `lib.trainer.podsets.compute` returns (quantities in nano-units)."""
        return {
            "podSets": [ps.as_json() for ps in self.pod_sets],
            "totalRequests": dict(self.total_requests),
            "pods": self.pods,
            "trainerNodes": self.trainer_nodes,
            "invalid": sorted(set(self.invalid)),
        }


def formatted(resources: Resources) -> dict[str, str]:
    return {name: describe_nanos(resources[name]) for name in sorted(resources)}


def _get(value: Any, *path: Any, default: Any = None) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return default
        value = value[key]
    return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _integer(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _name(value: Any) -> str:
    name = _get(value, "name")
    return name if isinstance(name, str) else ""


def _add(a: Resources, b: Resources) -> Resources:
    out = dict(a)
    for name, nanos in b.items():
        out[name] = out.get(name, 0) + nanos
    return out


def _max(a: Resources, b: Resources) -> Resources:
    out = dict(a)
    for name, nanos in b.items():
        if name not in out or nanos > out[name]:
            out[name] = nanos
    return out


@dataclass(frozen=True)
class _Policy:
    has_ml_policy: bool
    torch: bool
    mpi: bool
    launcher_as_node: bool
    runtime_num_nodes: int

    @staticmethod
    def of(runtime: dict[str, Any]) -> _Policy:
        ml = _get(runtime, "spec", "mlPolicy")
        has = isinstance(ml, dict)
        mpi = isinstance(_get(ml, "mpi"), dict)
        return _Policy(
            has_ml_policy=has,
            torch=isinstance(_get(ml, "torch"), dict),
            mpi=mpi,
            launcher_as_node=mpi and _get(ml, "mpi", "runLauncherAsNode") is True,
            runtime_num_nodes=_integer(_get(ml, "numNodes")) or 1 if has else 1,
        )


def _resources(resources: Any, path: str, invalid: list[str]) -> Resources:
    """Effective requests of one container: requests, plus limits of resources without a request."""
    requests = _object(_get(resources, "requests"))
    limits = _object(_get(resources, "limits"))
    out: Resources = {}
    for kind, values in (("requests", requests), ("limits", limits)):
        for name, value in values.items():
            if kind == "limits" and name in requests:
                continue
            nanos = parse_nanos(value)
            if nanos is None:
                invalid.append(f"{path}.{kind}[{name}]")
            else:
                out[name] = nanos
    return out


def _pod_requests(
    pod_spec: Any, path: str, replaced: set[str], resources_per_node: Any, invalid: list[str]
) -> Resources:
    def container_requests(container: Any, where: str, app_container: bool = True) -> Resources:
        if app_container and _name(container) in replaced:
            return _resources(resources_per_node, RESOURCES_PER_NODE, invalid)
        return _resources(_get(container, "resources"), f"{where}.resources", invalid)

    app: Resources = {}
    for i, container in enumerate(_list(_get(pod_spec, "containers"))):
        app = _add(app, container_requests(container, f"{path}.containers[{i}]"))
    sidecars: Resources = {}
    init: Resources = {}
    for i, container in enumerate(_list(_get(pod_spec, "initContainers"))):
        own = container_requests(container, f"{path}.initContainers[{i}]", app_container=False)
        if _get(container, "restartPolicy") == "Always":
            app = _add(app, own)
            sidecars = _add(sidecars, own)
            candidate = sidecars
        else:
            candidate = _add(own, sidecars)
        init = _max(init, candidate)
    pod = _max(app, init)
    overhead: Resources = {}
    for name, value in _object(_get(pod_spec, "overhead")).items():
        nanos = parse_nanos(value)
        if nanos is None:
            invalid.append(f"{path}.overhead[{name}]")
        else:
            overhead[name] = nanos
    return _add(pod, overhead)


def _resources_per_node_set(trainjob: dict[str, Any]) -> Any:
    rpn = _get(trainjob, "spec", "trainer", "resourcesPerNode")
    if isinstance(rpn, dict) and (rpn.get("limits") is not None or rpn.get("requests") is not None):
        return rpn
    return None


def compute(trainjob: dict[str, Any], runtime: dict[str, Any]) -> PodSets:
    """The TrainJob's PodSets on this (Cluster)TrainingRuntime."""
    policy = _Policy.of(runtime)
    jobs = _list(_get(runtime, "spec", "template", "spec", "replicatedJobs"))
    num_nodes = _integer(_get(trainjob, "spec", "trainer", "numNodes"))
    resources_per_node = _resources_per_node_set(trainjob)

    ancestors: list[str | None] = []
    counts: list[int] = []
    for job in jobs:
        ancestor = _get(job, "template", "metadata", "labels", ANCESTOR_LABEL)
        ancestor = ancestor if isinstance(ancestor, str) else None
        count = _integer(_get(job, "template", "spec", "parallelism"))
        count = 1 if count is None else count
        if ancestor == TRAINER and policy.has_ml_policy:
            count = policy.runtime_num_nodes
        ancestors.append(ancestor)
        counts.append(max(count, 1))

    if num_nodes is not None:
        if policy.torch or not policy.mpi:
            first = next((i for i, a in enumerate(ancestors) if a == TRAINER), None)
            if first is not None:
                counts[first] = num_nodes
        if policy.mpi:
            first = next((i for i, job in enumerate(jobs) if _name(job) == NODE), None)
            if first is not None:
                counts[first] = max(num_nodes - 1, 1) if policy.launcher_as_node else num_nodes

    invalid: list[str] = []
    pod_sets = []
    for i, job in enumerate(jobs):
        name = _name(job)
        path = f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec"
        pod_spec = _get(job, "template", "spec", "template", "spec")
        node_job = ancestors[i] == TRAINER or (policy.mpi and name == NODE)
        replaced: set[str] = set()
        if resources_per_node is not None and (ancestors[i] == TRAINER or (policy.launcher_as_node and name == NODE)):
            replaced = {NODE, LAUNCHER} if policy.launcher_as_node else {NODE}
        pod_sets.append(
            PodSet(
                name=name,
                ancestor=ancestors[i],
                count=max(counts[i], 1),
                containers=tuple(_name(c) for c in _list(_get(pod_spec, "containers"))),
                init_containers=tuple(_name(c) for c in _list(_get(pod_spec, "initContainers"))),
                single_pod_requests=_pod_requests(pod_spec, path, replaced, resources_per_node, invalid),
                trainer_node=node_job,
            )
        )
    return PodSets(tuple(pod_sets), tuple(invalid))
