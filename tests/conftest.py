"""Session-wide test wiring: the real kube-apiserver fixture (`kube_cluster`) and the `kube` marker, and a fact
cache of the session's own, so no test reads or writes the user's ~/.cache (CLI subprocesses inherit it)."""

import os
import shutil
import tempfile

import pytest

from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR

pytest_plugins = ["tests.kube.plugin"]


@pytest.fixture(scope="session", autouse=True)
def session_fact_cache():
    folder = tempfile.mkdtemp(prefix="trainer-policy-facts-")
    previous = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = folder
    yield folder
    if previous is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = previous
    shutil.rmtree(folder, ignore_errors=True)
