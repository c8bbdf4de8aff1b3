"""external_data as Gatekeeper builds it: responses, errors, system_error, status_code and the cache."""

from __future__ import annotations

import pytest

from kubeflow_trainer_policy.gatekeeper.external_data import (
    ExternalData,
    HttpsProvider,
    InProcessProvider,
    ResponseCache,
)
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy_provider.certs import make_ca
from tests.gatekeeper.helpers import FIXTURES, request, trainjob


def jobset(name: str, namespace: str = "team-a", active: dict[str, int] | None = None) -> dict:
    statuses = [
        {"name": n, "active": a, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0}
        for n, a in (active or {}).items()
    ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "status": {"replicatedJobsStatus": statuses},
    }


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def in_process(objects: list[dict]) -> InProcessProvider:
    return InProcessProvider.serving(objects)


@pytest.fixture
def echo_runner():
    policy_set = load_policy_set([FIXTURES / "templates.yaml", FIXTURES / "external-constraint.yaml"])
    objects = [jobset("job1", active={"node": 2, "launcher": 0}), jobset("idle")]
    clock = Clock()
    runner = GatekeeperRunner(
        policy_set, {"jobset-state": in_process(objects)}, cache=ResponseCache(ttl_seconds=180, clock=clock)
    )
    runner.clock = clock
    with runner:
        yield runner


def echo(runner: GatekeeperRunner, keys: list) -> dict:
    result = runner.review(request("CREATE", trainjob(keys=keys)))
    [violation] = [v for v in result.violations if v.constraint == "echo"]
    return violation.details


def test_success_lists_every_answered_key(echo_runner):
    response = echo(echo_runner, ["team-a/job1", "team-a/idle", "team-a/absent"])
    assert response == {
        "responses": [
            ["team-a/job1", {"found": True, "activeReplicatedJobs": ["node"]}],
            ["team-a/idle", {"found": True, "activeReplicatedJobs": []}],
            ["team-a/absent", {"found": False, "activeReplicatedJobs": []}],
        ],
        "errors": [],
        "status_code": 200,
        "system_error": "",
    }


def test_per_key_error_goes_to_errors_only(echo_runner):
    response = echo(echo_runner, ["team-a/job1", "not-a-key"])
    assert response["responses"] == [["team-a/job1", {"found": True, "activeReplicatedJobs": ["node"]}]]
    assert response["errors"] == [["not-a-key", "invalid key 'not-a-key': want <namespace>/<name>"]]
    assert response["status_code"] == 200


def test_all_cached_gives_status_code_zero_and_no_provider_call(echo_runner):
    first = echo(echo_runner, ["team-a/job1", "bad"])
    calls = echo_runner.external_data.calls
    second = echo(echo_runner, ["team-a/job1", "bad"])
    assert first["status_code"] == 200
    assert second["status_code"] == 0
    assert echo_runner.external_data.calls == calls
    assert second["responses"] == first["responses"]
    assert second["errors"] == first["errors"], "errors are cached too"


def test_cached_items_come_first_then_fresh_ones(echo_runner):
    echo(echo_runner, ["team-a/idle"])
    response = echo(echo_runner, ["team-a/job1", "team-a/idle"])
    assert [key for key, _ in response["responses"]] == ["team-a/idle", "team-a/job1"]
    assert response["status_code"] == 200


def test_cache_entries_expire_after_the_ttl(echo_runner):
    echo(echo_runner, ["team-a/job1"])
    echo_runner.clock.now += 181
    calls = echo_runner.external_data.calls
    assert echo(echo_runner, ["team-a/job1"])["status_code"] == 200
    assert echo_runner.external_data.calls == calls + 1


def test_unknown_provider_is_a_system_error_with_null_lists():
    builtin = ExternalData({})
    assert builtin({"provider": "missing", "keys": ["a/b"]}) == {
        "responses": None,
        "errors": None,
        "status_code": 400,
        "system_error": "failed to get external data provider 'missing': not found",
    }


def test_unreachable_provider_is_a_system_error(tmp_path, echo_runner):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(make_ca().cert_pem)  # a real CA: bad TLS files are refused up front, not at the lookup
    # Nothing listens on port 9 of the loopback: a real connection failure.
    echo_runner.external_data.providers = {"jobset-state": HttpsProvider("https://127.0.0.1:9/", str(ca), timeout=2)}
    response = echo(echo_runner, ["team-a/job1"])
    assert response["responses"] is None and response["errors"] is None
    assert response["system_error"].startswith("failed to send external data request")


def test_malformed_builtin_request_is_a_system_error():
    builtin = ExternalData({"p": in_process([])})
    assert builtin({"provider": "p", "keys": "a/b"})["system_error"] == (
        "external_data request `keys` must be a list of strings"
    )
    assert builtin("nope")["status_code"] == 400


class SwitchableProvider:
    """The provider's own handler over a JobSet whose state the test changes between requests."""

    def __init__(self, objects: list[dict]) -> None:
        self.objects = objects
        self.keys: list[str] = []

    def fetch(self, keys: list[str]):
        self.keys += keys
        return in_process(self.objects).fetch(keys)


def test_jobset_turning_active_between_requests_is_seen_despite_the_default_cache():
    """Gatekeeper caches each answer for 3 minutes per key; the external-data rule's key carries the request
    uid, so the second request reaches the provider and sees the JobSet that turned active."""
    from kubeflow_trainer_policy.catalog.trainjob_fixtures import default_runtime
    from kubeflow_trainer_policy.gatekeeper.review import request_from_document
    from kubeflow_trainer_policy.paths import external_data_bundle_dir
    from kubeflow_trainer_policy_provider.reader import Document
    from tests.admission import admission_review

    def update(uid: str):
        ref = {"name": "torch-distributed"}
        old = trainjob("job1", runtimeRef=ref, suspend=True, podSpecOverrides=[{"targetJobs": [{"name": "node"}]}])
        new = trainjob("job1", runtimeRef=ref, suspend=True, podSpecOverrides=[{"targetJobs": [{"name": "launcher"}]}])
        return request_from_document(Document("test", admission_review("UPDATE", new, old, uid=uid)))

    policy_set = load_policy_set([external_data_bundle_dir("v2.0")])
    provider = SwitchableProvider([jobset("job1", active={"node": 0})])
    cache = ResponseCache()  # Gatekeeper's default TTL, never expired in this test
    assert cache.ttl_seconds == 180
    # The cluster holds the TrainJob's runtime: the bundle's runtime checks read it from the inventory.
    with GatekeeperRunner(policy_set, cache=cache, objects=[default_runtime()]) as runner:
        runner.external_data.fallback = provider
        assert runner.review(update("uid-1")).allowed
        provider.objects = [jobset("job1", active={"node": 3})]
        second = runner.review(update("uid-2"))
    assert [v.msg for v in second.violations] == [
        "spec.podSpecOverrides: Forbidden: PodSpecOverrides cannot be modified when the JobSet's ReplicatedJob node "
        "is still active"
    ]
    assert provider.keys == ["team-a/job1#uid-1", "team-a/job1#uid-2"]


def test_the_same_key_is_served_from_the_cache_for_three_minutes():
    """Why the key carries the uid: with a repeated key Gatekeeper would answer from its cache."""
    provider = SwitchableProvider([jobset("job1", active={"node": 0})])
    builtin = ExternalData({"p": provider}, ResponseCache())
    first = builtin({"provider": "p", "keys": ["team-a/job1"]})
    provider.objects = [jobset("job1", active={"node": 3})]
    second = builtin({"provider": "p", "keys": ["team-a/job1"]})
    assert first["responses"] == second["responses"] and second["status_code"] == 0
    assert provider.keys == ["team-a/job1"]
