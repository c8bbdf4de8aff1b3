"""ProviderHandler: the request document, key format, key cap, per-request deadline, value contract."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy_provider.handler import API_VERSION, ProviderHandler, parse_key
from kubeflow_trainer_policy_provider.sources import Lookup, StaticJobSetSource
from tests.provider.helpers import provider_request

JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "job1", "namespace": "team-a"},
    "status": {"replicatedJobsStatus": [{"name": "node", "active": 2}, {"name": "init", "active": 0}]},
}


def handler(**kwargs: object) -> ProviderHandler:
    return ProviderHandler(StaticJobSetSource([JOBSET]), **kwargs)  # type: ignore[arg-type]


def test_values_follow_the_documented_contract() -> None:
    status, body = handler().handle(provider_request(["team-a/job1", "team-a/other"]))
    assert status == 200
    assert body["apiVersion"] == API_VERSION and body["kind"] == "ProviderResponse"
    assert body["response"]["idempotent"] is True
    assert body["response"]["items"] == [
        {"key": "team-a/job1", "value": {"found": True, "activeReplicatedJobs": ["node"]}},
        {"key": "team-a/other", "value": {"found": False, "activeReplicatedJobs": []}},
    ]


@pytest.mark.parametrize(
    "key", ["", "team-a", "/job1", "team-a/", "a/b/c", "Team-A/job1", "team-a/job 1", "team-a/..", "x" * 64 + "/j"]
)
def test_bad_key_format_is_a_per_key_error(key: str) -> None:
    assert parse_key(key) is None
    _, body = handler().handle(provider_request([key, "team-a/job1"]))
    bad, good = body["response"]["items"]
    assert bad["key"] == key and "want <namespace>/<name>" in bad["error"] and "value" not in bad
    assert good["value"]["found"] is True
    assert "systemError" not in body["response"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        ({"apiVersion": "v1", "kind": "ProviderRequest", "request": {"keys": []}}, "apiVersion"),
        ({"apiVersion": API_VERSION, "kind": "ProviderResponse", "request": {"keys": []}}, "kind ProviderRequest"),
        ({"apiVersion": API_VERSION, "kind": "ProviderRequest"}, "request.keys"),
        ({"apiVersion": API_VERSION, "kind": "ProviderRequest", "request": {"keys": [1]}}, "request.keys"),
    ],
)
def test_malformed_documents_are_system_errors(body: object, message: str) -> None:
    status, response = handler().handle(body)
    assert status == 200 and message in response["response"]["systemError"]
    assert response["response"]["items"] == []


def test_key_count_cap() -> None:
    _, body = handler(max_keys=3).handle(provider_request(["a/b"] * 4))
    assert body["response"]["systemError"] == "too many keys: 4 > 3"


class SlowSource:
    """A fake source whose every lookup takes 0.3 s of (fake) time."""

    def __init__(self) -> None:
        self.now = 0.0

    def lookup(self, namespace: str, name: str) -> Lookup:
        self.now += 0.3
        return Lookup(jobset=None)


def test_deadline_turns_remaining_keys_into_errors_fake_slow_source() -> None:
    source = SlowSource()
    h = ProviderHandler(source, timeout=1.0, clock=lambda: source.now)
    _, body = h.handle(provider_request([f"ns/k{i}" for i in range(6)]))
    answered = [item for item in body["response"]["items"] if "value" in item]
    timed_out = [item for item in body["response"]["items"] if "error" in item]
    assert len(answered) == 4 and len(timed_out) == 2
    assert "timed out after 1s" in timed_out[0]["error"]


def test_source_errors_are_per_key_errors() -> None:
    class Failing:
        def lookup(self, namespace: str, name: str) -> Lookup:
            return Lookup(error="jobsets.jobset.x-k8s.io is forbidden")

    _, body = ProviderHandler(Failing()).handle(provider_request(["ns/a"]))
    assert body["response"]["items"] == [{"key": "ns/a", "error": "jobsets.jobset.x-k8s.io is forbidden"}]


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(
        st.one_of(st.text(max_size=40), st.sampled_from(["team-a/job1", "team-a/other", "a/b.c"])), max_size=20
    )
)
def test_answer_bytes_equal_handle_document(keys: list[str]) -> None:
    h = handler()
    document = provider_request(keys)
    answer = h.answer(document)
    assert json.loads(answer.body) == h.handle(document)[1]
    assert answer.key_errors == sum(1 for k in keys if parse_key(k) is None)


def test_the_in_memory_fast_path_parses_keys_only_through_keys_parse_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key format change is one change in the provider's keys.py: e.g. `<namespace>/<name>#<suffix>`."""

    def parse_with_suffix(key: str) -> tuple[str, str] | None:
        return parse_key(key.partition("#")[0])

    monkeypatch.setattr("kubeflow_trainer_policy_provider.handler.parse_key", parse_with_suffix)
    h = handler()
    for answer in (h.answer, lambda doc: ProviderHandler(SlowPathSource(), timeout=1.0).answer(doc)):
        body = json.loads(answer(provider_request(["team-a/job1#uid-1", "team-a/none#uid-2"])).body)
        assert body["response"]["items"] == [
            {"key": "team-a/job1#uid-1", "value": {"found": True, "activeReplicatedJobs": ["node"]}},
            {"key": "team-a/none#uid-2", "value": {"found": False, "activeReplicatedJobs": []}},
        ]


class SlowPathSource:
    """The same JobSet behind `lookup` only (no in-memory table): the handler's general path."""

    def lookup(self, namespace: str, name: str) -> Lookup:
        return StaticJobSetSource([JOBSET]).lookup(namespace, name)
