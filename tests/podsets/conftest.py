from __future__ import annotations

import pytest

from kubeflow_trainer_policy.podsets.rego import PodSetsEngine


@pytest.fixture(scope="session")
def rego_podsets():
    """The podsets, nanos and review libs, as every template ships them, in one warm engine."""
    with PodSetsEngine.from_catalog() as engine:
        yield engine
