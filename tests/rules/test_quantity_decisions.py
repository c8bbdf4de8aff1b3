"""Issue 29, item 4: the budget rule decides on every quantity Kubernetes accepts, however it is spelled, with the
real engine and the shipped bundles: a request above a limit is denied, one at or below it is admitted, and no
builtin fails on the way (Gatekeeper would silently make it undefined).

The expected decisions come from the values worked out by hand below (apimachinery's ParseQuantity: any int64
decimal exponent wrapped to int32, rounding up to nano-units, binary-SI capped at 2^63-1 units), not from the
project's parser.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy_provider.reader import read_documents
from tests.gatekeeper.helpers import request, trainjob
from tests.rules.helpers import bundle

PROFILES = ["v2.0", "v2.3"]
KIND = "TrainerTrainJobResourceBudget"
RUNTIMES = "tests/fixtures/runtimes/{profile}/runtimes.yaml"

# (request, limit, denied): one trainer node, so the total is the request.
CASES = [
    # the cases: a huge request, and a huge limit meaning "unlimited"
    ("1e308", "64", True),
    ("4", "1e308", False),
    ("1e308", "1e308", False),
    # the same value spelled five ways, against limits just below, at and above it
    *[(spelled, "1e308", False) for spelled in ("1E308", "0.1e309", "100e306", "1e+308", "1" + "0" * 308)],
    *[(spelled, "99e306", True) for spelled in ("1E308", "0.1e309", "100e306", "1e+308", "1" + "0" * 308)],
    ("1e308", "1.0000000000000001e308", False),
    ("1.0000000000000001e308", "1e308", True),  # beyond float64 precision, still exact
    ("1e400", "1e308", True),
    ("1e400", "1e401", False),
    ("1e4000", "64", True),
    ("1e99999", "64", True),
    ("4", "1e99999", False),
    ("1e99999", "1e99999", True),  # both beyond exact comparison: denied, the message says why
    # SI, binary-SI, fractions and nano precision
    ("64001m", "64", True),
    ("64000m", "64", False),
    ("0.064k", "64", False),
    ("64.000000001", "64", True),
    ("64.0000000001", "64", True),  # rounded up to 64.000000001, as apimachinery does
    ("64.0000000001", "64.000000001", False),
    ("1Gi", "1073741824", False),
    ("1Gi", "1073741823", True),
    ("8Ei", "1e19", False),  # binary-SI caps at 2^63-1 units (9.2e18)
    ("8Ei", "9223372036854775806", True),
    # apimachinery reads the exponent as an int64 and keeps int32(exponent)
    ("1e4294967296", "2", False),  # 10^0
    ("1e4294967296", "500m", True),
    ("5e2147483648", "1n", False),  # 5 x 10^-2147483648: rounded up to one nano-unit
    ("5e2147483648", "0", True),
]


@cache
def runner(profile: str) -> GatekeeperRunner:
    policy_set = bundle(profile)
    objects = [d.body for d in read_documents(RUNTIMES.format(profile=profile))]
    return GatekeeperRunner(policy_set, objects=objects)


def review(profile: str, cpu: Any, limit: Any) -> tuple[list[str], list[str], list[str]]:
    run = runner(profile)
    constraint = next(c for c in run.policy_set.constraints if c.kind == KIND)
    saved = dict(constraint.parameters)
    constraint.parameters.clear()
    constraint.parameters.update({"maxTotal": {"cpu": limit}})
    try:
        job = trainjob(
            "big",
            runtimeRef={"name": "torch-distributed"},
            trainer={"numNodes": 1, "resourcesPerNode": {"requests": {"cpu": cpu}}},
        )
        result = run.review(request("CREATE", job))
    finally:
        constraint.parameters.clear()
        constraint.parameters.update(saved)
    budget = [v.msg for v in result.violations if v.constraint_kind == KIND]
    return budget, result.errors, result.builtin_failures


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("cpu", "limit", "denied"), CASES, ids=[f"{c[:20]}-vs-{m[:20]}" for c, m, _ in CASES])
def test_a_request_above_its_limit_is_denied_however_spelled(profile: str, cpu: str, limit: str, denied: bool) -> None:
    messages, errors, failures = review(profile, cpu, limit)
    assert errors == [] and failures == []
    assert bool(messages) == denied, messages
    if denied:
        assert messages[0].startswith("spec: Forbidden: total cpu requests "), messages


def test_the_messages_name_huge_values_readably() -> None:
    [message], _, _ = review("v2.0", "1e308", "64")
    assert message == "spec: Forbidden: total cpu requests 1e308 exceed the limit 64"
    [message], _, _ = review("v2.0", "1e99999", "1e99999")
    assert message == (
        "spec: Forbidden: total cpu requests at least 1e991 exceed the limit 1e99999 "
        "(both are at least 1e991, beyond exact comparison)"
    )


@pytest.mark.parametrize("value", ["1e1.5", "1e9223372036854775808", "1e0Ki", "1" + "2" * 1100])
def test_values_kubernetes_cannot_parse_are_reported_not_guessed(value: str) -> None:
    messages, errors, failures = review("v2.0", value, "64")
    assert errors == [] and failures == []
    assert messages == [
        "spec.trainer.resourcesPerNode: Invalid: cannot compute the TrainJob's resources: "
        "spec.trainer.resourcesPerNode.requests[cpu] is not a Kubernetes quantity"
    ]
    messages, errors, failures = review("v2.0", "4", value)
    assert errors == [] and failures == []
    assert [m.split(" in the Constraint")[0] for m in messages] == [f"spec: Internal: the limit {value} for cpu"]


def test_podsets_command_reports_huge_requests(tmp_path) -> None:
    """`trainer-policy podsets` (the lib on the engine) gives the total the budget rule compares."""
    import json

    import yaml

    from tests.cli.helpers import run_cli

    job = trainjob("big", runtimeRef={"name": "torch-distributed"})
    job["spec"]["trainer"] = {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "1e308"}}}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    result = run_cli("podsets", path, "--objects", RUNTIMES.format(profile="v2.0"), "-o", "json")
    assert result.code == 0, result
    assert json.loads(result.stdout)["totalRequests"]["cpu"] == "2e308"
