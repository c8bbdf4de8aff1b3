"""docs/upstream/checks.md names, per check the oracle can show, the generated request that exercises it in each
profile (tests/oracle/witnesses); each still does, on the Trainer oracle of that release."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kubeflow_trainer_policy.oracle.build import RELEASE_OF_PROFILE
from kubeflow_trainer_policy.oracle.run import Oracle
from tests.oracle import checks

CHECKS = {c.id: c for c in checks.load()}
WITNESSES = checks.witnesses()


def test_checks_page_names_the_current_witnesses() -> None:
    text = checks.CHECKS.read_text()
    assert checks.SECTION in text, "docs/upstream/checks.md has no oracle section: run `python -m tests.oracle.checks`"
    assert (
        text.split(checks.SECTION)[1]
        == checks.render_section(list(CHECKS.values()), WITNESSES).split(checks.SECTION)[1]
    ), "docs/upstream/checks.md's oracle section is stale: run `python -m tests.oracle.checks`"


@pytest.fixture(scope="module")
def oracles() -> Iterator[dict[str, Oracle]]:
    pool: dict[str, Oracle] = {}
    yield pool
    for oracle in pool.values():
        oracle.close()


@pytest.mark.parametrize(("profile", "check_id"), sorted(WITNESSES), ids=lambda x: x)
def test_witness_still_reaches_its_check(oracles: dict[str, Oracle], profile: str, check_id: str) -> None:
    body = json.loads(WITNESSES[(profile, check_id)].read_text())
    if profile not in oracles:
        oracles[profile] = Oracle(RELEASE_OF_PROFILE[profile])
    decision = oracles[profile].decide(body["review"], body["objects"])
    assert CHECKS[check_id].reached_by(decision), f"{profile} {check_id}: {decision.as_json()}"
