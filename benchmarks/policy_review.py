"""Cost of one TrainJob UPDATE review with every TrainJob constraint of a bundle, for 1..256 overrides, in
profile v2.0 (podSpecOverrides) and v2.3 (runtimePatches, whose pod fields are also immutable per patch).

Reported as a ratio to the trivial one-rule template measured in the same run (benchmarks/trivial_baseline.py).
Scenarios per override count:
- unchanged: the overrides are identical (suspend flips): the common update, one structural comparison.
- semantically_equal (v2.0): every quantity rewritten (`1` -> `1000m`): a full semantic walk, still no change.
  v2.3 has no such scenario: a runtime patch's containers are immutable as written (CEL compares them as they
  are), so that update is denied.
- changed: overrides changed while suspended (v2.0: the last override's cpu; v2.3: the last patch's
  nodeSelector, a mutable field): semantic walk + JobSet lookup through external_data (served from
  Gatekeeper's cache after the first call, status_code 0, as in steady state).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

from benchmarks.common import max_rss_mib, measure, measure_interleaved, write_result
from benchmarks.trivial_baseline import trivial_runner
from kubeflow_trainer_policy.catalog.trainjob_fixtures import job, override_entry, runtime
from kubeflow_trainer_policy.gatekeeper.external_data import InProcessProvider
from kubeflow_trainer_policy.gatekeeper.match import request_matches
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy.profiles import get_profile
from kubeflow_trainer_policy_provider.handler import ProviderHandler
from kubeflow_trainer_policy_provider.reader import Document
from kubeflow_trainer_policy_provider.sources import StaticJobSetSource

OVERRIDE_COUNTS = (1, 4, 16, 64, 256)
PROFILES = ("v2.0", "v2.3")
PROFILE = PROFILES[0]


def _override(profile: str, i: int, cpu: str, memory: str, pool: str) -> dict[str, Any]:
    """One override of job-<i> in the profile's shape."""
    return override_entry(
        get_profile(profile),
        [f"job-{i}"],
        containers=[{"name": "node", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        manager=f"example.com/m{i}",
        pod_fields={"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "nodeSelector": {"pool": pool}},
    )


def _trainjob(
    count: int,
    *,
    suspend: bool,
    profile: str = PROFILE,
    cpu: str = "1",
    memory: str = "1Gi",
    last_cpu: str | None = None,
    last_pool: str | None = None,
) -> dict:
    """`count` overrides of job-0.., the last one's cpu or nodeSelector pool replaced when given."""
    last = count - 1
    overrides = [
        _override(
            profile,
            i,
            last_cpu if last_cpu is not None and i == last else cpu,
            memory,
            last_pool if last_pool is not None and i == last else f"pool-{i % 4}",
        )
        for i in range(count)
    ]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "bench", "namespace": "team-a"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "suspend": suspend,
            get_profile(profile).override_field: overrides,
            "managedBy": "kueue.x-k8s.io/multikueue",
        },
    }


def _update(old: dict, new: dict) -> AdmissionRequest:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"operation": "UPDATE", "object": new, "oldObject": old},
    }
    return request_from_document(Document("benchmark", review))


def scenarios(count: int, profile: str = PROFILE) -> dict[str, AdmissionRequest]:
    base = _trainjob(count, suspend=True, profile=profile)
    unchanged = _update(base, {**copy.deepcopy(base), "spec": {**base["spec"], "suspend": False}})
    if get_profile(profile).override_field == "runtimePatches":
        return {
            "unchanged": unchanged,
            "changed": _update(base, _trainjob(count, suspend=True, profile=profile, last_pool="pool-x")),
        }
    return {
        "unchanged": unchanged,
        "semantically_equal": _update(
            base, _trainjob(count, suspend=True, profile=profile, cpu="1000m", memory="1024Mi")
        ),
        "changed": _update(base, _trainjob(count, suspend=True, profile=profile, last_cpu="2")),
    }


def _jobset() -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "bench", "namespace": "team-a"},
        "status": {"replicatedJobsStatus": [{"name": "node", "active": 0, "succeeded": 2}]},
    }


def cluster(count: int) -> list[dict[str, Any]]:
    """What the bundle reads: the TrainJob's JobSet (inactive) and its runtime, one replicated job per override
    (the overrides target distinct jobs; the design's scale grows overrides and replicated jobs together)."""
    return [_jobset(), runtime("torch-distributed", [job(f"job-{i}", containers=["node"]) for i in range(count)])]


def policy_runner(count: int = 1, profile: str = PROFILE) -> GatekeeperRunner:
    policy_set = load_policy_set([gatekeeper_bundle_dir(profile)])
    handler = ProviderHandler(StaticJobSetSource([_jobset()]))
    providers = {name: InProcessProvider(handler.handle) for name in policy_set.providers}
    return GatekeeperRunner(policy_set, providers, objects=cluster(count))


def _iterations(count: int) -> int:
    return 3000 if count == 1 else 1000 if count <= 4 else 300 if count <= 16 else 100 if count <= 64 else 40


def _measure(fn: Any, count: int) -> dict[str, float]:
    return measure(fn, warmup=max(5, _iterations(count) // 10), iterations=_iterations(count))


def _matching(runner: GatekeeperRunner, request: AdmissionRequest) -> list[str]:
    review = request.as_input()
    return [c.name for c in runner.policy_set.constraints if request_matches(c.match, review, None)]


def run() -> dict[str, Any]:
    baseline_runner, baseline_request = trivial_runner()
    with baseline_runner:
        baseline = measure(lambda: baseline_runner.review(baseline_request), iterations=3000)
    profiles = {profile: run_profile(profile, baseline) for profile in PROFILES}
    first = profiles[PROFILE]
    return {
        "profile": PROFILE,
        "constraints": first["constraints"],
        "override_counts": list(OVERRIDE_COUNTS),
        "trivial_baseline": baseline,
        "scenarios": first["scenarios"],
        "median_growth_1_to_256": first["median_growth_1_to_256"],
        "targets": first["targets"],
        "profiles": profiles,
        "max_rss_mib": max_rss_mib(),
        "go_gc_tuned": go_gc_tuned(),
    }


def run_profile(profile: str, baseline: dict[str, float]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    constraints: list[str] = []
    for count in OVERRIDE_COUNTS:
        # The same cluster on both sides, given when each runner is built (it is then in the engine's store, as
        # for `trainer-policy review --objects`).
        with policy_runner(count, profile) as runner, trivial_runner(cluster(count))[0] as trivial:
            constraints = sorted(c.name for c in runner.policy_set.constraints)
            for name, request in scenarios(count, profile).items():
                result = runner.review(request)
                assert not result.errors and result.allowed, (profile, count, name, result.as_json())
                # The trivial template on the SAME request: converting a large request into OPA values costs
                # the same whatever the policy, so this ratio is the cost the policies add.
                pair = measure_interleaved(
                    {"policies": lambda r=request: runner.review(r), "trivial": lambda r=request: trivial.review(r)},
                    warmup=max(5, _iterations(count) // 10),
                    iterations=_iterations(count),
                )
                stats, same = pair["policies"], pair["trivial"]
                stats["matched_constraints"] = len(_matching(runner, request))
                stats["trivial_same_input_median_ms"] = same["median_ms"]
                stats["ratio_to_trivial_same_input"] = stats["median_ms"] / same["median_ms"]
                stats["ratio_to_trivial_median"] = stats["median_ms"] / baseline["median_ms"]
                results.setdefault(name, {})[str(count)] = stats
    growth = {
        name: by_count[str(OVERRIDE_COUNTS[-1])]["median_ms"] / by_count[str(OVERRIDE_COUNTS[0])]["median_ms"]
        for name, by_count in results.items()
    }
    return {
        "constraints": constraints,
        "scenarios": results,
        "median_growth_1_to_256": growth,
        "targets": targets(results, growth),
    }


# The p99 tail is Go's garbage collector in the embedded engine. Go reads GOGC/GOMEMLIMIT when the engine's
# runtime starts, so the tuned figures come from a child process; nothing here changes the default.
GO_GC_TUNING = {"GOGC": "off", "GOMEMLIMIT": "128MiB"}


def go_gc_tuned() -> dict[str, Any]:
    """The one-override scenarios again, with Go collecting only near a memory limit."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.policy_review", "--one-override-json"],
        env={**os.environ, **GO_GC_TUNING},
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return {"env": GO_GC_TUNING, **json.loads(proc.stdout)}


def one_override() -> dict[str, Any]:
    with policy_runner() as runner:
        stats = {name: _measure(lambda r=request: runner.review(r), 1) for name, request in scenarios(1).items()}
    return {"scenarios": stats, "max_rss_mib": max_rss_mib()}


def targets(results: dict[str, Any], growth: dict[str, float]) -> dict[str, Any]:
    """Target: median within 2x of the trivial template, p99 under 1 ms (one override), growth at most linear."""
    first = str(OVERRIDE_COUNTS[0])
    linear_bound = OVERRIDE_COUNTS[-1] / OVERRIDE_COUNTS[0]
    return {
        name: {
            "median_within_2x_of_trivial_same_input": by_count[first]["ratio_to_trivial_same_input"] <= 2.0,
            "p99_under_1ms": by_count[first]["p99_ms"] < 1.0,
            "growth_at_most_linear": growth[name] <= linear_bound,
        }
        for name, by_count in results.items()
    }


def main() -> None:
    if "--one-override-json" in sys.argv:
        print(json.dumps(one_override()))
        return
    payload = run()
    path = write_result("policy_review", payload)
    base = payload["trivial_baseline"]["median_ms"]
    print(f"trivial baseline: median {base:.3f} ms")
    for profile, figures in payload["profiles"].items():
        for name, by_count in figures["scenarios"].items():
            cells = ", ".join(
                f"{n}: {s['median_ms']:.3f} ms ({s['ratio_to_trivial_same_input']:.2f}x trivial on the same input, "
                f"p99 {s['p99_ms']:.3f})"
                for n, s in by_count.items()
            )
            print(f"{profile} {name}: {cells}")
    tuned = payload["go_gc_tuned"]
    print(
        f"with {tuned['env']}: "
        + ", ".join(
            f"{name} median {s['median_ms']:.3f} ms p99 {s['p99_ms']:.3f} ms" for name, s in tuned["scenarios"].items()
        )
        + f", max RSS {tuned['max_rss_mib']:.0f} MiB (default GC: {payload['max_rss_mib']:.0f} MiB)"
    )
    for profile, figures in payload["profiles"].items():
        for name, met in figures["targets"].items():
            print(f"targets {profile} {name}: " + ", ".join(f"{k}={'met' if v else 'NOT met'}" for k, v in met.items()))
    print(f"-> {path}")


if __name__ == "__main__":
    main()
