"""The Trainer's own validating webhooks (tools/trainer-oracle, one build per release tag) against the bundled
policies of the matching profile, on generated requests: same decision and, for denials, the same field errors,
except the reviewed deviations (deviations.yaml), which must each still occur. `make oracle` runs the long
campaign (tests/oracle/campaign.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from kubeflow_trainer_policy.oracle.build import RELEASE_OF_PROFILE
from kubeflow_trainer_policy.oracle.differential import Differential, Verdict, compare
from kubeflow_trainer_policy.oracle.run import Decision
from tests.oracle import deviations as deviation_list
from tests.oracle.strategies import Request, profile, requests

SAMPLE = int(os.environ.get("TRAINER_ORACLE_SAMPLE", "40"))
"""Generated requests per profile in `make test` (the campaign runs far more)."""
PROFILES = tuple(RELEASE_OF_PROFILE)
DEVIATIONS = deviation_list.load()

_open: dict[str, Differential] = {}


@pytest.fixture(scope="module")
def differentials() -> Iterator[dict[str, Differential]]:
    yield _open
    for differential in _open.values():
        differential.close()
    _open.clear()


def _differential(pool: dict[str, Differential], name: str) -> Differential:
    if name not in pool:
        pool[name] = Differential(name, RELEASE_OF_PROFILE[name])
    return pool[name]


def _report(verdict: Verdict, request: Request) -> str:
    return json.dumps(
        {
            "unexplained": [d.as_json() for d in verdict.unexplained],
            "oracle": verdict.oracle.as_json(),
            "policy": verdict.policy.as_json(),
            "review": request.review,
            "objects": request.objects,
        },
        indent=1,
    )


@pytest.mark.parametrize("name", PROFILES)
def test_generated_requests_agree_with_the_trainer(differentials: dict[str, Differential], name: str) -> None:
    differential = _differential(differentials, name)

    @settings(
        max_examples=SAMPLE,
        derandomize=True,  # the same sample every run: `make test` does not flicker; the campaign varies seeds
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(requests(profile(name)))
    def agree(request: Request) -> None:
        verdict = differential.judge(request.review, request.objects, DEVIATIONS)
        assert not verdict.unexplained, _report(verdict, request)

    agree()


@pytest.mark.parametrize("deviation", DEVIATIONS, ids=lambda d: d.id)
def test_each_listed_deviation_still_occurs(differentials: dict[str, Differential], deviation) -> None:
    """The list is exact: a deviation whose example no longer shows it (fixed, or moved) must leave the list."""
    for name in deviation.profiles:
        review, objects = deviation_list.example_request(deviation, name)
        verdict = _differential(differentials, name).judge(review, objects, DEVIATIONS)
        ids = set(verdict.explained.values())
        report = _report(verdict, Request(review, objects))
        assert deviation.id in ids, f"{name}: {deviation.id} no longer occurs: {report}"


def test_deviations_page_is_current() -> None:
    assert deviation_list.DOC.read_text() == deviation_list.render(DEVIATIONS), (
        "docs/upstream/deviations.md is stale: run `.venv/bin/python -m tests.oracle.deviations`"
    )


def test_a_difference_no_deviation_matches_is_unexplained() -> None:
    """The comparison itself: an error only the Trainer reports, matched by no listed deviation, is unexplained;
    an equal pair of decisions has no difference."""
    error = ("spec.trainer.env", "Invalid", "some detail nobody lists")
    verdict = compare("v2.3", Decision(False, frozenset({error})), Decision(True, frozenset()), DEVIATIONS)
    assert [d.error for d in verdict.unexplained] == [error]
    same = compare("v2.3", Decision(False, frozenset({error})), Decision(False, frozenset({error})), DEVIATIONS)
    assert same.agrees
