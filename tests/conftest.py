"""Session-wide test wiring: the real kube-apiserver fixture (`kube_cluster`) and the `kube` marker, and a fact
cache of the session's own, so no test reads or writes the user's ~/.cache (CLI subprocesses inherit it)."""

import pytest

from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR

pytest_plugins = ["tests.kube.plugin"]


@pytest.fixture(scope="session", autouse=True)
def session_fact_cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trainer-policy-facts")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_VAR, str(folder))
        yield folder
