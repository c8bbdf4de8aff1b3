"""Kubeflow's shipped runtimes (tests/fixtures/runtimes): `podsets` gives the hand-calculated totals, the budget
rule admits each TrainJob at exactly its totals and denies it one unit below, and every rule of the profile
admits every runtime and TrainJob with the default Constraints."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy.podsets.model import compute, formatted
from kubeflow_trainer_policy.profiles import PROFILES, generated_profiles
from kubeflow_trainer_policy_provider.reader import read_documents
from tests.rules.helpers import review_cli, review_cli_many

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runtimes"
Gi, Mi = 2**30, 2**20
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Expected:
    pod_sets: list[tuple[str, str | None, int, dict[str, str]]]
    """(name, ancestor, count, per-Pod requests)"""
    total: dict[str, str]
    pods: int
    trainer_nodes: int


# Worked out by hand from runtimes.yaml and each TrainJob (see docs/podsets.md for the rules).
EXPECTED = {
    # 4 trainer Pods; resourcesPerNode replaces the node container's resources (GPU limit = request).
    "torch-4x8": Expected(
        [("node", "trainer", 4, {"cpu": "16", "memory": str(64 * Gi), GPU: "8"})],
        {"cpu": str(4 * 16), "memory": str(4 * 64 * Gi), GPU: str(4 * 8)},
        4,
        4,
    ),
    # MPI, launcher as a node: numNodes 4 = 3 node Pods + the launcher (the trainer job, count 1).
    "deepspeed-4x8": Expected(
        [("node", None, 3, {GPU: "8"}), ("launcher", "trainer", 1, {GPU: "8"})],
        {GPU: str(3 * 8 + 8)},
        4,
        4,
    ),
    "mlx-2": Expected(
        [
            ("node", None, 1, {"cpu": "4", "memory": str(8 * Gi)}),
            ("launcher", "trainer", 1, {"cpu": "4", "memory": str(8 * Gi)}),
        ],
        {"cpu": "8", "memory": str(16 * Gi)},
        2,
        2,
    ),
    # Initializers request nothing; the trainer's `limits: nvidia.com/gpu: 2` is its request.
    "torchtune-llama3-2-1b": Expected(
        [
            ("dataset-initializer", "dataset-initializer", 1, {}),
            ("model-initializer", "model-initializer", 1, {}),
            ("node", "trainer", 1, {GPU: "2"}),
        ],
        {GPU: "2"},
        3,
        1,
    ),
    # MPI without the launcher as a node: the node job gets numNodes 3, the launcher is one more Pod.
    "mpi-3": Expected(
        [
            ("launcher", None, 1, {"cpu": "500m", "memory": str(512 * Mi)}),
            ("node", "trainer", 3, {"cpu": "1", "memory": str(Gi)}),
        ],
        {"cpu": "3500m", "memory": str(512 * Mi + 3 * Gi)},
        4,
        3,
    ),
    # Per trainer Pod: app = node (32 CPU, 256Gi, 8 GPU) + sidecar (250m, 256Mi); the init container
    # (4 CPU, 32Gi) is smaller, so the Pod requests 32.25 CPU and 256Gi + 256Mi.
    "torch-with-initializers-4x8": Expected(
        [
            ("dataset-initializer", "dataset-initializer", 1, {"cpu": "2", "memory": str(4 * Gi)}),
            ("model-initializer", "model-initializer", 1, {"cpu": "2", "memory": str(8 * Gi)}),
            ("node", "trainer", 4, {"cpu": "32250m", "memory": str(256 * Gi + 256 * Mi), GPU: "8"}),
        ],
        {"cpu": str(2 + 2 + 129), "memory": str(4 * Gi + 8 * Gi + 4 * (256 * Gi + 256 * Mi)), GPU: "32"},
        6,
        4,
    ),
}
GENERATED = [p.name for p in generated_profiles()]


def _trainjob(profile: str, name: str) -> Path:
    return FIXTURES / profile / f"trainjob-{name}.yaml"


def _runtimes(profile: str) -> Path:
    return FIXTURES / profile / "runtimes.yaml"


def _report(expected: Expected) -> dict[str, Any]:
    return {
        "podSets": [
            {"name": n, "ancestor": a, "count": c, "singlePodRequests": dict(sorted(r.items()))}
            for n, a, c, r in expected.pod_sets
        ],
        "totalRequests": dict(sorted(expected.total.items())),
        "pods": expected.pods,
        "trainerNodes": expected.trainer_nodes,
    }


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_every_profile_has_every_fixture():
    for profile in PROFILES:
        assert sorted(p.name for p in (FIXTURES / profile).glob("trainjob-*.yaml")) == sorted(
            f"trainjob-{name}.yaml" for name in EXPECTED
        )


@pytest.mark.parametrize("profile", GENERATED)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_podsets_command_gives_the_hand_calculation(profile, name):
    code, out, err = _cli(
        [
            "podsets",
            str(_trainjob(profile, name)),
            "--objects",
            str(_runtimes(profile)),
            "--profile",
            profile,
            "-o",
            "json",
        ]
    )
    assert (code, err) == (0, "")
    report = json.loads(out)
    got = {
        "podSets": [
            {k: ps[k] for k in ("name", "ancestor", "count")} | {"singlePodRequests": ps["singlePodRequests"]}
            for ps in report["podSets"]
        ],
        **{k: report[k] for k in ("totalRequests", "pods", "trainerNodes")},
    }
    assert got == _report(EXPECTED[name])


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_model_and_rego_give_the_hand_calculation(profile, name, rego_podsets):
    """Every profile, including those without a shipped bundle yet: Python model and the catalog's Rego."""
    trainjob = yaml.safe_load(_trainjob(profile, name).read_text())
    inventory = inventory_document(doc.body for doc in read_documents(_runtimes(profile)))
    lookup = rego_podsets.runtime(inventory, trainjob)
    assert lookup["found"], lookup
    rego = rego_podsets.compute(trainjob, lookup["runtime"])
    python = compute(trainjob, lookup["runtime"])
    assert rego == python.as_json()
    assert formatted(python.total_requests) == dict(sorted(EXPECTED[name].total.items()))
    assert (python.pods, python.trainer_nodes) == (EXPECTED[name].pods, EXPECTED[name].trainer_nodes)


def _budget(total: dict[str, str], **counts: int) -> dict[str, dict[str, Any]]:
    return {"trainjob-resource-budget": {"maxTotal": total, **counts}}


def _below(quantity: str) -> str:
    """One nano-unit less than `quantity` (which is written in whole units or milli-units)."""
    if quantity.endswith("m"):
        return f"{int(quantity[:-1]) * 10**6 - 1}n"
    return f"{int(quantity) * 10**9 - 1}n"


@pytest.mark.parametrize("profile", GENERATED)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_budget_admits_at_the_totals_and_denies_below(tmp_path, profile, name):
    expected = EXPECTED[name]
    trainjob = yaml.safe_load(_trainjob(profile, name).read_text())
    objects = [doc.body for doc in read_documents(_runtimes(profile))]
    at_limit = review_cli(
        tmp_path,
        trainjob,
        objects=objects,
        profile=profile,
        parameters=_budget(expected.total, maxTrainerNodes=expected.trainer_nodes, maxPods=expected.pods),
    )
    assert (at_limit.exit_code, at_limit.messages) == (0, []), at_limit.stderr
    resource = GPU if GPU in expected.total else "cpu"
    below = {**expected.total, resource: _below(expected.total[resource])}
    denied = review_cli(
        tmp_path,
        trainjob,
        objects=objects,
        profile=profile,
        parameters=_budget(below, maxTrainerNodes=expected.trainer_nodes - 1, maxPods=expected.pods - 1),
    )
    assert denied.exit_code == 1, denied.stderr
    assert denied.messages == sorted(
        [
            f"spec: Forbidden: total {resource} requests {expected.total[resource]} exceed the limit {below[resource]}",
            f"spec: Forbidden: {expected.pods} pods (the gang's minMember) exceed the limit {expected.pods - 1}",
            f"spec.trainer.numNodes: Forbidden: {expected.trainer_nodes} trainer nodes exceed the limit "
            f"{expected.trainer_nodes - 1}",
        ]
    )


@pytest.mark.parametrize("profile", GENERATED)
def test_every_rule_admits_the_fixtures(tmp_path, profile):
    """Every runtime and TrainJob in one `review` of a folder, as CI reviews a folder of manifests: each object's
    own outcome and violations are checked."""
    runtimes = [doc.body for doc in read_documents(_runtimes(profile))]
    subjects = runtimes + [yaml.safe_load(_trainjob(profile, name).read_text()) for name in sorted(EXPECTED)]
    reviews = {f"{i:02d}-{subject['metadata']['name']}": subject for i, subject in enumerate(subjects)}
    code, results = review_cli_many(tmp_path, reviews, objects=runtimes, profile=profile)
    assert {name: (r.outcome, r.messages) for name, r in results.items()} == dict.fromkeys(reviews, ("allowed", []))
    assert code == 0
