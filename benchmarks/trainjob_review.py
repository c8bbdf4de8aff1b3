"""Cost of one full TrainJob CREATE review (every constraint of the bundle: name, runtime reference, ML policy,
deprecation, managedBy, ...) with the runtime read from an inventory of 1,000 runtimes, for 1..64 overrides.

Reported as a ratio to the trivial one-rule template measured in the same run on the same request and the
same inventory (the runner hands data.inventory to the engine with each review, whatever the template, so
that cost is the runner's and shows in both). Target: <= 3x, and growth at most linear in the overrides.
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.common import max_rss_mib, measure_interleaved, write_result
from benchmarks.trivial_baseline import FIXTURE
from generator.catalog.trainjob_fixtures import container, override_entry, runtime, trainjob
from generator.gatekeeper.documents import Document
from generator.gatekeeper.policy_set import load_policy_set
from generator.gatekeeper.review import AdmissionRequest, request_from_document
from generator.gatekeeper.runner import GatekeeperRunner
from generator.paths import gatekeeper_bundle_dir
from generator.profiles import get_profile

PROFILES = ("v2.0", "v2.3")
OVERRIDE_COUNTS = (1, 4, 16, 64)
RUNTIMES = 1000
TARGET_RATIO = 3.0


def inventory_objects() -> list[dict[str, Any]]:
    """500 ClusterTrainingRuntimes and 500 TrainingRuntimes over 10 namespaces; the TrainJob uses one of them."""
    objects = [runtime(f"cluster-runtime-{i}") for i in range(RUNTIMES // 2)]
    objects += [
        runtime(f"runtime-{i}", kind="TrainingRuntime", namespace=f"team-{i % 10}") for i in range(RUNTIMES // 2)
    ]
    objects.append(runtime("torch-distributed"))
    return objects


def request(profile: str, count: int) -> AdmissionRequest:
    p = get_profile(profile)
    entries = [
        override_entry(
            p,
            ["node"],
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
    return 600 if count <= 4 else 200 if count <= 16 else 60


def run() -> dict[str, Any]:
    objects = inventory_objects()
    results: dict[str, Any] = {}
    for profile in PROFILES:
        policies = GatekeeperRunner(load_policy_set([gatekeeper_bundle_dir(profile)]), objects=objects)
        trivial = GatekeeperRunner(load_policy_set([FIXTURE]), objects=objects)
        with policies, trivial:
            by_count: dict[str, Any] = {}
            for count in OVERRIDE_COUNTS:
                req = request(profile, count)
                result = policies.review(req)
                assert not result.errors and result.allowed and not result.violations, result.as_json()
                pair = measure_interleaved(
                    {
                        "policies": lambda r=req, run=policies: run.review(r),
                        "trivial": lambda r=req, run=trivial: run.review(r),
                    },
                    warmup=max(5, _iterations(count) // 10),
                    iterations=_iterations(count),
                )
                stats = pair["policies"]
                stats["trivial_same_input_median_ms"] = pair["trivial"]["median_ms"]
                stats["ratio_to_trivial_same_input"] = stats["median_ms"] / pair["trivial"]["median_ms"]
                by_count[str(count)] = stats
            first, last = by_count[str(OVERRIDE_COUNTS[0])], by_count[str(OVERRIDE_COUNTS[-1])]
            growth = last["median_ms"] / first["median_ms"]
            results[profile] = {
                "constraints": sorted(c.name for c in policies.policy_set.constraints),
                "overrides": by_count,
                "median_growth_first_to_last": growth,
                "targets": {
                    "ratio_at_most_3x_one_override": first["ratio_to_trivial_same_input"] <= TARGET_RATIO,
                    "ratio_at_most_3x_every_count": all(
                        s["ratio_to_trivial_same_input"] <= TARGET_RATIO for s in by_count.values()
                    ),
                    "growth_at_most_linear": growth <= OVERRIDE_COUNTS[-1] / OVERRIDE_COUNTS[0],
                },
            }
    return {
        "runtimes_in_inventory": len(objects),
        "override_counts": list(OVERRIDE_COUNTS),
        "profiles": results,
        "max_rss_mib": max_rss_mib(),
    }


def main() -> None:
    payload = run()
    path = write_result("trainjob_review", payload)
    for profile, res in payload["profiles"].items():
        cells = ", ".join(
            f"{n}: {s['median_ms']:.3f} ms ({s['ratio_to_trivial_same_input']:.2f}x trivial)"
            for n, s in res["overrides"].items()
        )
        print(
            f"{profile} ({payload['runtimes_in_inventory']} runtimes): {cells}; "
            f"growth {res['median_growth_first_to_last']:.2f}x"
        )
        print(f"targets {profile}: " + ", ".join(f"{k}={'met' if v else 'NOT met'}" for k, v in res["targets"].items()))
    print(f"-> {path}")


if __name__ == "__main__":
    sys.exit(main())
