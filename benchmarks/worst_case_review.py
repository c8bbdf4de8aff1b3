"""Worst case of one review: the largest objects each profile's CRDs admit, and the largest request a webhook can
receive, reviewed by the whole bundle in the embedded engine (GatekeeperRunner.review, the runtime stored in the
engine as Gatekeeper's sync stores it). Target: under 500 ms per review, and every scenario linear (a quarter of
the objects takes a quarter of the time).

What bounds the objects (Kubeflow Trainer's types at each release; docs/upstream/trainjob-admission.md lists the
snapshots): v2.0 (`podSpecOverrides`, T20) and v2.1 (`podTemplateOverrides`, T21) put no maxItems on the override
list, its containers, env or targetJobs; v2.2 and v2.3 (`runtimePatches`, P22) allow 16 patches of 100 replicated
jobs with 64 containers and 64 initContainers each (C13). A runtime's replicatedJobs come from JobSet, whose
types set no maxItems. So every list is bounded by the object's size in the end: etcd stores at most 1.5 MiB per
object, and the API server accepts request bodies up to 3 MiB, which an UPDATE review (object and oldObject) of
two 1.5 MiB objects reaches.

Scenarios, per profile:
- `issue_5000x2000`: the issue's case, 5,000 overrides over a runtime of 2,000 replicated jobs (v2.2+: 16 patches of
  100 jobs, the most the CRD allows, over the same runtime), an UPDATE that drops one override.
- `size_bound_update`: a TrainJob of 1.4 MiB of overrides (each naming a job and a container) and a runtime of
  1.4 MiB of replicated jobs; an UPDATE whose old object differs in every override and is not suspended (every
  override compared in depth): a review of about 3 MiB.
- `size_bound_env`: a CREATE whose spec.trainer.env fills 1.4 MiB (torch runtime: the reserved-env check reads it).
- `many_targets`: one override entry whose targetJobs (no maxItems up to v2.1) fill 1.4 MiB, naming a runtime's 100
  jobs round robin (about 86,000 targets); an UPDATE whose old object renames the last target, so the comparison
  of the overrides runs to the end of the list. v2.2+: 16 patches of 100 jobs (the CRD's most), the last renamed.
- `missing_targets`: as many_targets, but every target names a job of its own that the runtime lacks (about 66,000),
  and the override sets a container: up to v2.1 each job is also missing it, one error per job upstream.
- `distinct_update`: as size_bound_update, but no two overrides are alike (an env value of each its own, as a
  TrainJob whose overrides each set their own value): no pod can be read once for many.
- `wide_entry`: a CREATE whose one override entry names every job of a 1.4 MiB runtime (about 7,000) and fills the
  rest of 1.4 MiB with containers of its own (about 72,000; none is the runtime's): the product of the two is what
  a check that compares each job with each container would take. v2.2+: 16 patches of 100 jobs, each with as many
  containers as fit (at most 64).
- `runtime_update`: a ClusterTrainingRuntime UPDATE of two 1.4 MiB objects (JobSet puts no maxItems on
  replicatedJobs), every job (about 5,500) labelled as the trainer with 2 replicas and no `node` container: each
  breaks the reserved-replicas check and, from v2.1, the required-container check.

Each is measured beside the trivial one-rule template on the same request in the same run: its time is what
converting the request into OPA values costs, which no policy can avoid (Gatekeeper converts it too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import max_rss_mib, write_result
from benchmarks.trivial_baseline import FIXTURE
from kubeflow_trainer_policy.catalog.trainjob_fixtures import container, job, override_entry, runtime, trainjob
from kubeflow_trainer_policy.gatekeeper import cel_engine
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy.profiles import Profile, get_profile
from kubeflow_trainer_policy_provider.reader import Document

PROFILES = ("v2.0", "v2.1", "v2.2", "v2.3")
TARGET_MS = 500.0
NOISE_FLOOR_MS = 20.0
"""The smallest policy CPU time a growth ratio is taken from (CPU time varies by a few ms between rounds)."""
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
OBJECT_BYTES = int(1.4 * 1024 * 1024)
"""Each object a little under etcd's 1.5 MiB (the rest of a stored object is metadata)."""
PATCHES, PATCH_JOBS, PATCH_CONTAINERS = 16, 100, 64
"""runtimePatches maxItems, replicatedJobs per patch, containers per pod (v2.2+)."""


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _runtime(jobs: int) -> dict[str, Any]:
    rt = runtime("torch-distributed")
    rt["spec"]["template"]["spec"]["replicatedJobs"] += [
        job(f"worker-{i}", containers=["node", "sidecar"], init_containers=["setup"]) for i in range(jobs)
    ]
    return rt


def _jobs_for(size: int) -> int:
    """How many worker jobs make a runtime of about `size` bytes."""
    one = _size(job("worker-99999", containers=["node", "sidecar"], init_containers=["setup"]))
    return max(1, size // (one + 1))


def _entries(
    p: Profile, count: int, jobs: int, env_value: str = "1", *, distinct: bool = False
) -> list[dict[str, Any]]:
    """`count` overrides naming worker jobs round robin (v2.2+: packed into at most 16 patches of 100 jobs);
    `distinct`: each override's env value its own (v2.0, v2.1)."""

    def containers(i: int) -> list[dict[str, Any]]:
        value = f"{env_value}{i:05d}" if distinct else env_value
        return [container("node"), container("sidecar", [{"name": "V", "value": value}])]

    if p.override_field != "runtimePatches":
        return [
            override_entry(p, [f"worker-{i % jobs}"], containers=containers(i), init_containers=[container("setup")])
            for i in range(count)
        ]
    shared = containers(0)
    patches = []
    for patch in range(min(PATCHES, -(-count // PATCH_JOBS))):
        names = [f"worker-{(patch * PATCH_JOBS + i) % jobs}" for i in range(min(PATCH_JOBS, count - patch * 100))]
        entry = override_entry(p, names, containers=shared, init_containers=[container("setup")])
        entry["manager"] = f"example.com/m{patch}"
        patches.append(entry)
    return patches


RESOURCES = {
    "TrainJob": "trainjobs",
    "TrainingRuntime": "trainingruntimes",
    "ClusterTrainingRuntime": "clustertrainingruntimes",
}


def _review(operation: str, new: dict[str, Any], old: dict[str, Any] | None) -> AdmissionRequest:
    kind = new["kind"]
    request: dict[str, Any] = {
        "uid": "u",
        "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": kind},
        "resource": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": RESOURCES[kind]},
        "name": new["metadata"]["name"],
        "operation": operation,
        "userInfo": {"username": "bench"},
        "object": new,
        "oldObject": old,
    }
    if "namespace" in new["metadata"]:
        request["namespace"] = new["metadata"]["namespace"]
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return request_from_document(Document("bench", body))


def issue_case(p: Profile, scale: float) -> tuple[AdmissionRequest, dict[str, Any], int]:
    jobs, count = max(1, int(2000 * scale)), max(1, int(5000 * scale))
    entries = _entries(p, count, jobs)
    new = trainjob(p, trainer={"numNodes": 4}, overrides=entries, extra={"suspend": True})
    old = trainjob(p, trainer={"numNodes": 4}, overrides=entries[:-1] or None, extra={"suspend": True})
    return _review("UPDATE", new, old), _runtime(jobs), count


def size_bound_update(
    p: Profile, scale: float, *, distinct: bool = False
) -> tuple[AdmissionRequest, dict[str, Any], int]:
    size = int(OBJECT_BYTES * scale)
    jobs = _jobs_for(size)
    one = _size(_entries(p, 1, jobs, distinct=distinct)[0]) if p.override_field != "runtimePatches" else None
    if one is not None:
        count = max(1, size // (one + 1))
        entries = _entries(p, count, jobs, distinct=distinct)
        old_entries = _entries(p, count, jobs, env_value="2", distinct=distinct)
    else:  # 16 patches of 100 jobs, each job's pod with as many containers as the size allows (at most 64)
        count = PATCHES * PATCH_JOBS
        per_container = _size(container("c-99", [{"name": "V", "value": "1"}])) + 1
        containers = min(PATCH_CONTAINERS, max(1, size // (count * per_container)))
        entries, old_entries = [], []
        for patch in range(PATCHES):
            names = [f"worker-{(patch * PATCH_JOBS + i) % jobs}" for i in range(PATCH_JOBS)]
            for value, target in (("1", entries), ("2", old_entries)):
                pod = [container(f"c-{k}", [{"name": "V", "value": value}]) for k in range(containers)]
                entry = {**override_entry(p, names, containers=pod), "manager": f"example.com/m{patch}"}
                if distinct:  # each job patch's first container an env value of its own
                    for k, job_patch in enumerate(entry["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]):
                        own = [container("c-0", [{"name": "V", "value": f"{value}{patch:02d}{k:02d}"}]), *pod[1:]]
                        job_patch["template"]["spec"]["template"]["spec"] = {"containers": own}
                target.append(entry)
        count *= containers
    new = trainjob(p, trainer={"numNodes": 4}, overrides=entries, extra={"suspend": False})
    old = trainjob(p, trainer={"numNodes": 4}, overrides=old_entries, extra={"suspend": False})
    return _review("UPDATE", new, old), _runtime(jobs), count


def size_bound_env(p: Profile, scale: float) -> tuple[AdmissionRequest, dict[str, Any], int]:
    size = int(OBJECT_BYTES * scale)
    count = max(1, size // (_size({"name": "VAR_99999", "value": "x"}) + 1))
    env = [{"name": f"VAR_{i}", "value": "x"} for i in range(count)]
    new = trainjob(p, trainer={"numNodes": 4, "numProcPerNode": 8, "env": env})
    return _review("CREATE", new, None), _runtime(1), count


def wide_entry(p: Profile, scale: float) -> tuple[AdmissionRequest, dict[str, Any], int]:
    size = int(OBJECT_BYTES * scale)
    jobs = _jobs_for(size)
    rt = _runtime(jobs)
    per_container = _size({"name": "c-99999"}) + 1
    if p.override_field == "runtimePatches":
        count = PATCHES * PATCH_JOBS
        containers = min(PATCH_CONTAINERS, max(1, size // (count * per_container)))
        pod = [{"name": f"c-{k}"} for k in range(containers)]
        entries = [
            {
                **override_entry(
                    p, [f"worker-{(patch * PATCH_JOBS + i) % jobs}" for i in range(PATCH_JOBS)], containers=pod
                ),
                "manager": f"example.com/m{patch}",
            }
            for patch in range(PATCHES)
        ]
        elements = count * (1 + containers)
    else:
        names = [f"worker-{i}" for i in range(jobs)]
        containers = max(1, (size - _size(names)) // per_container)
        entries = [override_entry(p, names, containers=[{"name": f"c-{k}"} for k in range(containers)])]
        elements = jobs + containers
    new = trainjob(p, trainer={"numNodes": 4}, overrides=entries)
    return _review("CREATE", new, None), rt, elements


MANY_TARGETS_JOBS = 100
"""The runtime jobs that many_targets names round robin."""


def many_targets(p: Profile, scale: float, *, missing: bool = False) -> tuple[AdmissionRequest, dict[str, Any], int]:
    def name(i: int) -> str:
        return f"absent-{i}" if missing else f"worker-{i % MANY_TARGETS_JOBS}"

    if p.override_field == "runtimePatches":
        names = [[name(patch * PATCH_JOBS + i) for i in range(PATCH_JOBS)] for patch in range(PATCHES)]
        names = names[: max(1, int(PATCHES * scale))]
    else:
        one = _size({"name": name(99999)}) + 1
        count = max(2, int(OBJECT_BYTES * scale) // one)
        names = [[name(i) for i in range(count)]]
    renamed = [*names[:-1], [*names[-1][:-1], "worker-renamed"]]
    pod = [container("node")] if missing else None
    entries = [
        {**override_entry(p, jobs, containers=pod), "manager": f"example.com/m{i}"} for i, jobs in enumerate(names)
    ]
    old_entries = [
        {**override_entry(p, jobs, containers=pod), "manager": f"example.com/m{i}"} for i, jobs in enumerate(renamed)
    ]
    if p.override_field != "runtimePatches":  # a manager is a runtime patch's key only
        for entry in (*entries, *old_entries):
            del entry["manager"]
    new = trainjob(p, trainer={"numNodes": 4}, overrides=entries, extra={"suspend": False})
    old = trainjob(p, trainer={"numNodes": 4}, overrides=old_entries, extra={"suspend": False})
    return _review("UPDATE", new, old), _runtime(MANY_TARGETS_JOBS), sum(len(jobs) for jobs in names)


def _reserved_job(name: str) -> dict[str, Any]:
    """A replicated job labelled as the trainer, with 2 replicas and no `node` container."""
    reserved = job(name, containers=["sidecar"], init_containers=["setup"])
    reserved["replicas"] = 2
    reserved["template"]["metadata"] = {"labels": {ANCESTOR_LABEL: "trainer"}}
    return reserved


def runtime_update(p: Profile, scale: float) -> tuple[AdmissionRequest, dict[str, Any], int]:
    size = int(OBJECT_BYTES * scale)
    count = max(1, size // (_size(_reserved_job("worker-99999")) + 1))
    new = runtime("torch-distributed", [_reserved_job(f"worker-{i}") for i in range(count)])
    old = runtime("torch-distributed", [_reserved_job(f"worker-{i}") for i in range(count - 1)])
    return _review("UPDATE", new, old), _runtime(1), count


SCENARIOS: dict[str, Callable[[Profile, float], tuple[AdmissionRequest, dict[str, Any], int]]] = {
    "issue_5000x2000": issue_case,
    "size_bound_update": size_bound_update,
    "size_bound_env": size_bound_env,
    "many_targets": many_targets,
    "missing_targets": lambda p, scale: many_targets(p, scale, missing=True),
    "distinct_update": lambda p, scale: size_bound_update(p, scale, distinct=True),
    "wide_entry": wide_entry,
    "runtime_update": runtime_update,
}


def _timed(fn: Callable[[], Any], rounds: int) -> dict[str, float]:
    fn()  # prepares the queries
    wall, cpu = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    return {"median_ms": round(statistics.median(wall), 1), "cpu_ms": round(statistics.median(cpu), 1)}


def policy_paths(profile: str, rules: list[str] | None) -> list[Path]:
    """The profile's whole bundle, or only the given rules' templates and Constraints."""
    root = gatekeeper_bundle_dir(profile)
    if not rules:
        return [root]
    unknown = [rule for rule in rules if not (root / rule / "template.yaml").is_file()]
    if unknown:
        raise SystemExit(f"worst_case_review: --rules: no rule {', '.join(unknown)} in {root}")
    return [path for rule in rules for path in (root / rule, root / rule / "constraint")]


def measure(
    profile: str,
    name: str,
    scale: float,
    rounds: int,
    engine: str = cel_engine.REGO,
    rules: list[str] | None = None,
) -> dict[str, Any]:
    p = get_profile(profile)
    request, rt, elements = SCENARIOS[name](p, scale)
    policies = load_policy_set(policy_paths(profile, rules))
    trivial = load_policy_set([FIXTURE])
    with (
        GatekeeperRunner(trivial, objects=[rt]) as baseline,
        GatekeeperRunner(policies, objects=[rt], engine=engine) as runner,
    ):
        result = runner.review(request)
        assert not result.errors and not result.builtin_failures, (result.errors, result.builtin_failures)
        floor = _timed(lambda: baseline.review(request), rounds)
        full = _timed(lambda: runner.review(request), rounds)
    review_bytes = _size(request.as_input())
    return {
        "elements": elements,
        "review_mib": round(review_bytes / 2**20, 2),
        "runtime_mib": round(_size(rt) / 2**20, 2),
        "violations": len(result.violations),
        "review": full,
        "trivial_template": floor,
        "policy_cpu_ms": round(full["cpu_ms"] - floor["cpu_ms"], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES))
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--engine",
        choices=cel_engine.ENGINES,
        default=cel_engine.REGO,
        help="rego: every template by its Rego (the default); auto: a template's CEL where it has one, as "
        "Gatekeeper 3.18+ runs it (tools/cel, Kubernetes' admission-policy code)",
    )
    parser.add_argument(
        "--rules",
        nargs="+",
        metavar="RULE",
        help="review with only these rules (bundles/gatekeeper/<profile>/<rule>), not the whole bundle",
    )
    parser.add_argument("--output", default="worst_case_review", help="the results file name (benchmarks/results)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    matrix: list[dict[str, Any]] = []
    met: dict[str, Any] = {}
    load_at_start = os.getloadavg()
    for profile in args.profiles:
        for name in args.scenarios:
            quarter = measure(profile, name, 0.25, args.rounds, args.engine, args.rules)
            full = measure(profile, name, 1.0, args.rounds, args.engine, args.rules)
            elements = full["elements"] / max(quarter["elements"], 1)
            # Below the noise of CPU time (a few ms either way), a quarter's policy time says nothing about growth:
            # the growth is then bounded by a noise floor, and the review's own growth is reported beside it.
            growth = full["policy_cpu_ms"] / max(quarter["policy_cpu_ms"], NOISE_FLOOR_MS)
            review_growth = full["review"]["cpu_ms"] / max(quarter["review"]["cpu_ms"], 0.1)
            row = {"profile": profile, "scenario": name, "quarter": quarter, "full": full}
            row["linear"] = {
                "elements_ratio": round(elements, 2),
                "policy_cpu_ratio": round(growth, 2),
                "review_cpu_ratio": round(review_growth, 2),
            }
            matrix.append(row)
            met[f"{profile}/{name}"] = {
                "median_ms": full["review"]["median_ms"],
                "under_500_ms": full["review"]["median_ms"] < TARGET_MS,
                "linear": growth <= elements * 1.5,
            }
            print(json.dumps(row), flush=True)
    path = write_result(
        args.output,
        {
            "engine": args.engine,
            "rules": args.rules or "all",
            "targets": {
                "median_ms": TARGET_MS,
                "linear": f"policy CPU (from at least {NOISE_FLOOR_MS} ms) grows at most 1.5x the elements",
            },
            "matrix": matrix,
            "met": met,
            "peak_rss_mib": round(max_rss_mib(), 1),
            # Other work shares the machine's cores: the 1-, 5- and 15-minute load averages, as `uptime` gives them.
            "load_average": {
                "start": [round(x, 2) for x in load_at_start],
                "end": [round(x, 2) for x in os.getloadavg()],
            },
        },
    )
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
