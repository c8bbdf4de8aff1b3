"""The CEL tests' figures, on the terminal at the end of the run."""

from __future__ import annotations

import pytest

from kubeflow_trainer_policy.cel import gatekeeper
from tests.cel.helpers import TALLY


@pytest.fixture(scope="package", autouse=True)
def report(request):
    yield
    writer = request.config.pluginmanager.get_plugin("terminalreporter")
    if writer is not None and TALLY.reviews:
        writer.write_line(
            f"\nCEL differential: {TALLY.reviews} reviews (rule x profile) judged by CEL and Rego, max cost "
            f"{TALLY.max_cost} of Gatekeeper's {gatekeeper.PER_CALL_LIMIT}, {TALLY.truncated} with more violations "
            "than their rule's CEL slots"
        )
