"""Cost of one full TrainJob CREATE review (every constraint of the bundle: name, runtime reference, ML policy,
deprecation, managedBy, ...) with the runtime read from an inventory of 1,000 runtimes, for 1..64 overrides.

Two runtime shapes: the runtime's worker jobs grow with the overrides (one per override, as in policy_review),
and a fixed runtime of 67 jobs whatever the overrides (the worst case for few overrides: every template that
reads the runtime's jobs converts all 67 into OPA values).

Reported as a ratio to the trivial one-rule template measured in the same run on the same request and the
same inventory, stored in the engine once as Gatekeeper's sync stores it. Target: <= 3x, and growth at most
linear in the overrides.
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.common import max_rss_mib, measure, measure_interleaved, write_result
from benchmarks.trivial_baseline import FIXTURE
from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.catalog.trainjob_fixtures import container, job, override_entry, runtime, trainjob
from kubeflow_trainer_policy.engine.embedded import EmbeddedOpaEngine
from kubeflow_trainer_policy.gatekeeper.match import request_matches
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet, load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy.profiles import get_profile
from kubeflow_trainer_policy_provider.reader import Document

PROFILES = ("v2.0", "v2.3")
OVERRIDE_COUNTS = (1, 4, 16, 64)
RUNTIMES = 1000
TARGET_RATIO = 3.0


def inventory_objects(workers: int = max(OVERRIDE_COUNTS)) -> list[dict[str, Any]]:
    """500 ClusterTrainingRuntimes and 500 TrainingRuntimes over 10 namespaces; the TrainJob uses one of them."""
    objects = [runtime(f"cluster-runtime-{i}") for i in range(RUNTIMES // 2)]
    objects += [
        runtime(f"runtime-{i}", kind="TrainingRuntime", namespace=f"team-{i % 10}") for i in range(RUNTIMES // 2)
    ]
    objects.append(bench_runtime(workers))
    return objects


def bench_runtime(workers: int = max(OVERRIDE_COUNTS)) -> dict[str, Any]:
    """The TrainJob's runtime: initializers, the trainer job and `workers` worker jobs, one per override at the
    most (distinct targets, so that v2.0's duplicate-target check stays silent)."""
    rt = runtime("torch-distributed")
    jobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    jobs += [job(f"worker-{i}", containers=["node", "sidecar"], init_containers=["setup"]) for i in range(workers)]
    return rt


# Worker jobs of the TrainJob's runtime for a given override count.
RUNTIME_SHAPES = {
    "runtime_grows_with_overrides": lambda count: count,
    "runtime_of_67_jobs": lambda count: max(OVERRIDE_COUNTS),
}


def request(profile: str, count: int) -> AdmissionRequest:
    p = get_profile(profile)
    entries = [
        override_entry(
            p,
            [f"worker-{i}"],
            containers=[container("node"), container("sidecar", [{"name": f"V{i}", "value": "1"}])],
            init_containers=[container("setup")],
            manager=f"example.com/m{i}",
        )
        for i in range(count)
    ]
    job = trainjob(
        p,
        trainer={"numNodes": 4, "numProcPerNode": 8, "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]},
        initializer={"dataset": {"storageUri": "hf://d"}, "model": {"storageUri": "hf://m"}},
        overrides=entries,
    )
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"operation": "CREATE", "object": job},
    }
    return request_from_document(Document("benchmark", review))


def _iterations(count: int) -> int:
    return 200 if count <= 4 else 100 if count <= 16 else 40


class StoredInventoryReview:
    """Every matched template of a policy set evaluated as Gatekeeper does: data.inventory stored in the engine
    once (Gatekeeper's sync fills OPA's store), only the admission review passed per request."""

    def __init__(self, policy_set: PolicySet, objects: list[dict[str, Any]], sample: AdmissionRequest):
        review = sample.as_input()
        inventory = inventory_document(objects)
        self.evaluations: list[tuple[EmbeddedOpaEngine, str, dict[str, Any]]] = []
        self.names: list[str] = []
        for constraint in policy_set.constraints:
            if not request_matches(constraint.match, review, None):
                continue
            template = next(t for t in policy_set.templates.values() if t.kind == constraint.kind)
            engine = EmbeddedOpaEngine()
            for module in template.modules:
                engine.add_module(module.path, module.source)
            engine.add_data(inventory, "inventory")
            self.evaluations.append((engine, f"violations := data.{template.violation_path}", constraint.parameters))
            self.names.append(constraint.name)

    def review(self, request: AdmissionRequest) -> list[Any]:
        review = request.as_input()
        found: list[Any] = []
        for engine, query, parameters in self.evaluations:
            result = engine.eval_query(query, {"review": review, "parameters": parameters})
            found += result.bindings[0]["violations"] if result.bindings else []
        return found

    def per_template(self, request: AdmissionRequest, iterations: int) -> dict[str, float]:
        """Median ms of each matched template evaluated alone: where the time of a review goes."""
        review = request.as_input()
        figures: dict[str, float] = {}
        for name, (engine, query, parameters) in zip(self.names, self.evaluations, strict=True):
            payload = {"review": review, "parameters": parameters}
            stats = measure(lambda e=engine, q=query, p=payload: e.eval_query(q, p), warmup=3, iterations=iterations)
            figures[name] = stats["median_ms"]
        return figures

    def close(self) -> None:
        for engine, _, _ in self.evaluations:
            engine.close()


def _pair(policies: Any, trivial: Any, req: AdmissionRequest, iterations: int) -> dict[str, Any]:
    pair = measure_interleaved(
        {"policies": lambda: policies.review(req), "trivial": lambda: trivial.review(req)},
        warmup=max(5, iterations // 10),
        iterations=iterations,
    )
    stats = pair["policies"]
    stats["trivial_same_input_median_ms"] = pair["trivial"]["median_ms"]
    stats["ratio_to_trivial_same_input"] = stats["median_ms"] / pair["trivial"]["median_ms"]
    return stats


def _targets(by_count: dict[str, Any]) -> dict[str, Any]:
    first, last = by_count[str(OVERRIDE_COUNTS[0])], by_count[str(OVERRIDE_COUNTS[-1])]
    growth = last["median_ms"] / first["median_ms"]
    return {
        "median_growth_first_to_last": growth,
        "ratio_at_most_3x_one_override": first["ratio_to_trivial_same_input"] <= TARGET_RATIO,
        "ratio_at_most_3x_every_count": all(
            s["ratio_to_trivial_same_input"] <= TARGET_RATIO for s in by_count.values()
        ),
        "growth_at_most_linear": growth <= OVERRIDE_COUNTS[-1] / OVERRIDE_COUNTS[0],
    }


def run() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for profile in PROFILES:
        results[profile] = {shape: run_shape(profile, workers) for shape, workers in RUNTIME_SHAPES.items()}
    return {
        "runtimes_in_inventory": RUNTIMES + 1,
        "override_counts": list(OVERRIDE_COUNTS),
        "runtime_shapes": {
            shape: [
                len(bench_runtime(workers(n))["spec"]["template"]["spec"]["replicatedJobs"]) for n in OVERRIDE_COUNTS
            ]
            for shape, workers in RUNTIME_SHAPES.items()
        },
        "note": NOTE,
        "profiles": results,
        "max_rss_mib": max_rss_mib(),
    }


def run_shape(profile: str, workers: Any) -> dict[str, Any]:
    """Every measurement of one profile with the runtime's worker jobs given by `workers(count)`."""
    policy_set = load_policy_set([gatekeeper_bundle_dir(profile)])
    trivial_set = load_policy_set([FIXTURE])
    gatekeeper_like: dict[str, Any] = {}
    runner_figures: dict[str, Any] = {}
    per_template: dict[str, Any] = {}
    matched = 0
    for count in OVERRIDE_COUNTS:
        objects = inventory_objects(workers(count))
        req = request(profile, count)
        stored = StoredInventoryReview(policy_set, objects, req)
        trivial_stored = StoredInventoryReview(trivial_set, objects, req)
        runner = GatekeeperRunner(policy_set, objects=objects)
        trivial_runner = GatekeeperRunner(trivial_set, objects=objects)
        with runner, trivial_runner:
            result = runner.review(req)
            assert not result.errors and result.allowed and not result.violations, result.as_json()
            assert stored.review(req) == [], profile
            matched = len(stored.evaluations)
            gatekeeper_like[str(count)] = _pair(stored, trivial_stored, req, _iterations(count))
            runner_figures[str(count)] = _pair(runner, trivial_runner, req, _iterations(count))
            per_template[str(count)] = {
                **stored.per_template(req, _iterations(count) // 4),
                "(trivial)": trivial_stored.per_template(req, _iterations(count) // 4)["trivial"],
            }
        for review in (stored, trivial_stored):
            review.close()
    return {
        "matched_templates": matched,
        "stored_inventory": gatekeeper_like,
        "targets": _targets(gatekeeper_like),
        "runner": runner_figures,
        "runner_targets": _targets(runner_figures),
        "per_template_median_ms": per_template,
    }


NOTE = (
    "stored_inventory: each matched template in its own engine with data.inventory stored once, as in Gatekeeper; "
    "the ratio compares the sum over matched templates with the trivial template on the same request. "
    "runner: trainer-policy's runner (`trainer-policy review --objects`): every matched template in one engine "
    "with data.inventory stored once and one query, so the request is converted into OPA values once, against "
    "the trivial template the same way. "
    "per_template_median_ms: each template of stored_inventory evaluated alone (where the time goes)."
)


def main() -> None:
    payload = run()
    path = write_result("trainjob_review", payload)
    for profile, shapes in payload["profiles"].items():
        for shape, res in shapes.items():
            for kind in ("stored_inventory", "runner"):
                cells = ", ".join(
                    f"{n}: {s['median_ms']:.3f} ms ({s['ratio_to_trivial_same_input']:.2f}x trivial)"
                    for n, s in res[kind].items()
                )
                print(f"{profile} {shape} {kind}: {cells}")
            for kind in ("targets", "runner_targets"):
                print(
                    f"{profile} {shape} {kind}: "
                    + ", ".join(f"{k}={v if isinstance(v, bool) else round(v, 2)}" for k, v in res[kind].items())
                )
            for n, figures in res["per_template_median_ms"].items():
                print(
                    f"{profile} {shape} per template at {n}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
                )
    print(f"-> {path}")


if __name__ == "__main__":
    sys.exit(main())
