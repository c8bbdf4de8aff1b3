"""Session-wide test wiring: the real kube-apiserver fixture (`kube_cluster`) and the `kube` marker, a fact cache
of the session's own, so no test reads or writes the user's ~/.cache (CLI subprocesses inherit it), and the
grouping that keeps what shares one expensive fixture on one pytest-xdist worker."""

import pytest

from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR

pytest_plugins = ["tests.kube.plugin"]

SHARED_FIXTURES = {"kube_cluster": "kube"}
"""Session fixtures that start something heavy (a kube-apiserver and etcd): every test using one runs on the
same worker (`--dist loadgroup`), so the session starts it once, not once per worker."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, group in SHARED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session", autouse=True)
def session_fact_cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trainer-policy-facts")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_VAR, str(folder))
        yield folder
