"""Cost of one TrainJob CREATE review by the resource-budget rule, for runtimes of 1 to 64 replicated jobs.

Reported as a ratio to the trivial one-rule template (benchmarks/trivial_baseline.py) measured in the same run:
on the same request and inventory (so converting the input costs both the same), and to the baseline's own
small request. Each replicated job has two app containers, an init container and a sidecar with requests in
mixed spellings (`1500m`, `2Gi`, `1e3`), so every review parses and sums every quantity; limits on cpu, memory,
GPUs, trainer nodes and Pods are set and the TrainJob stays within them (the common, allowed case).
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import max_rss_mib, measure, measure_interleaved, write_result
from benchmarks.trivial_baseline import trivial_runner
from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet, load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy_provider.reader import Document

JOB_COUNTS = (1, 4, 16, 64)
PROFILE = "v2.0"
KIND = "TrainerTrainJobResourceBudget"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
LIMITS = {
    "maxTotal": {"cpu": "100k", "memory": "100Ti", "nvidia.com/gpu": 100000},
    "maxTrainerNodes": 1000,
    "maxPods": 100000,
}


def _container(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def _job(i: int) -> dict[str, Any]:
    pod = {
        "initContainers": [
            _container("fetch", "2", "1e9"),
            {**_container("agent", "250m", "256Mi"), "restartPolicy": "Always"},
        ],
        "containers": [
            {
                **_container("node" if i == 0 else f"worker-{i}", "1500m", "2Gi"),
                "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}, "limits": {"nvidia.com/gpu": 1}},
            },
            _container("helper", "100m", "128Mi"),
        ],
    }
    template: dict[str, Any] = {"spec": {"parallelism": 2, "template": {"spec": pod}}}
    if i == 0:
        template["metadata"] = {"labels": {ANCESTOR: "trainer"}}
    return {"name": "node" if i == 0 else f"job-{i}", "template": template}


def runtime(jobs: int) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "bench-runtime"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "template": {"spec": {"replicatedJobs": [_job(i) for i in range(jobs)]}},
        },
    }


def create_request() -> AdmissionRequest:
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "bench", "namespace": "team-a"},
        "spec": {
            "runtimeRef": {"name": "bench-runtime"},
            "trainer": {"numNodes": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}},
        },
    }
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"operation": "CREATE", "object": trainjob},
    }
    return request_from_document(Document("benchmark", review))


def budget_runner(objects: list[dict[str, Any]]) -> GatekeeperRunner:
    """The bundle's budget template alone, its Constraint with limits set, and the cluster `objects`."""
    bundle = load_policy_set([gatekeeper_bundle_dir(PROFILE)])
    constraint = next(c for c in bundle.constraints if c.kind == KIND)
    limited = Constraint(
        constraint.kind, constraint.name, constraint.match, LIMITS, constraint.enforcement_action, constraint.source
    )
    return GatekeeperRunner(PolicySet({KIND: bundle.templates[KIND]}, [limited], {}), objects=objects)


def _iterations(jobs: int) -> int:
    return 2000 if jobs == 1 else 1000 if jobs <= 4 else 300 if jobs <= 16 else 100


def run() -> dict[str, Any]:
    baseline_runner, baseline_request = trivial_runner()
    with baseline_runner:
        baseline = measure(lambda: baseline_runner.review(baseline_request), iterations=3000)
    request = create_request()
    results: dict[str, Any] = {}
    for jobs in JOB_COUNTS:
        objects = [runtime(jobs)]
        with budget_runner(objects) as runner, trivial_runner(objects)[0] as trivial:
            result = runner.review(request)
            assert not result.errors and result.allowed and not result.violations, (jobs, result.as_json())
            pair = measure_interleaved(
                {"budget": lambda: runner.review(request), "trivial": lambda: trivial.review(request)},
                warmup=max(5, _iterations(jobs) // 10),
                iterations=_iterations(jobs),
            )
            stats, same = pair["budget"], pair["trivial"]
            stats["trivial_same_input_median_ms"] = same["median_ms"]
            stats["ratio_to_trivial_same_input"] = stats["median_ms"] / same["median_ms"]
            stats["ratio_to_trivial_median"] = stats["median_ms"] / baseline["median_ms"]
            results[str(jobs)] = stats
    first, last = results[str(JOB_COUNTS[0])], results[str(JOB_COUNTS[-1])]
    growth = last["median_ms"] / first["median_ms"]
    return {
        "profile": PROFILE,
        "replicated_job_counts": list(JOB_COUNTS),
        "limits": LIMITS,
        "trivial_baseline": baseline,
        "budget_review": results,
        "median_growth_1_to_64": growth,
        "growth_at_most_linear": growth <= JOB_COUNTS[-1] / JOB_COUNTS[0],
        "max_rss_mib": max_rss_mib(),
    }


def main() -> None:
    payload = run()
    path = write_result("budget_review", payload)
    print(f"trivial baseline: median {payload['trivial_baseline']['median_ms']:.3f} ms")
    for jobs, s in payload["budget_review"].items():
        print(
            f"{jobs} replicated jobs: median {s['median_ms']:.3f} ms, p99 {s['p99_ms']:.3f} ms, "
            f"{s['ratio_to_trivial_same_input']:.2f}x trivial on the same input, "
            f"{s['ratio_to_trivial_median']:.2f}x the trivial baseline"
        )
    print(f"growth 1 -> 64 jobs: {payload['median_growth_1_to_64']:.1f}x -> {path}")


if __name__ == "__main__":
    main()
