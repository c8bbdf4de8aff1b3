"""Per-review cost of the runner for a trivial one-rule template: the baseline of policy benchmarks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.common import max_rss_mib, measure, write_result
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy_provider.reader import Document

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "trivial-template.yaml"


def sample_trainjob(name: str = "bench") -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True},
    }


def trivial_runner(objects: Iterable[dict[str, Any]] = ()) -> tuple[GatekeeperRunner, AdmissionRequest]:
    """A runner holding only the trivial template and the cluster `objects`, and an UPDATE review of a TrainJob."""
    runner = GatekeeperRunner(load_policy_set([FIXTURE]), objects=objects)
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"operation": "UPDATE", "object": sample_trainjob(), "oldObject": sample_trainjob()},
    }
    return runner, request_from_document(Document("benchmark", review))


def measure_baseline(iterations: int = 3000) -> dict[str, float]:
    runner, request = trivial_runner()
    with runner:
        result = runner.review(request)
        assert result.allowed and not result.violations, result
        return measure(lambda: runner.review(request), iterations=iterations)


def main() -> None:
    stats = measure_baseline()
    path = write_result("trivial_baseline", {"trivial_review": stats, "max_rss_mib": max_rss_mib()})
    print(f"trivial review: median {stats['median_ms']:.3f} ms, p99 {stats['p99_ms']:.3f} ms -> {path}")


if __name__ == "__main__":
    main()
