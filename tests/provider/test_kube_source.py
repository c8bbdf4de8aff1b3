"""The provider against a real kube-apiserver + etcd: answers follow JobSet status through the watch,
deletions become "not found", and an apiserver restart never yields a wrong answer."""

from __future__ import annotations

import itertools
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeflow_trainer_policy_provider.kube_auth import KubeCredentials, from_kubeconfig, in_cluster
from kubeflow_trainer_policy_provider.kube_source import KubeJobSetSource, WatchGone, WatchSettings
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from tests.kube.cluster import KubeCluster
from tests.provider.conftest import Pki, StartProvider
from tests.provider.helpers import items, post, session, wait_until

pytestmark = pytest.mark.kube

_ids = itertools.count()
REPLICATED = [{"name": "launcher", "replicas": 1}, {"name": "node", "replicas": 2}]


def status(launcher: int, node: int) -> list[dict[str, Any]]:
    return [
        {"name": "launcher", "ready": 0, "succeeded": 0, "failed": 0, "active": launcher, "suspended": 0},
        {"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": node, "suspended": 0},
    ]


@pytest.fixture
def namespace(kube_cluster: KubeCluster) -> str:
    name = f"prov-{int(time.time()) % 100000}-{next(_ids)}"
    kube_cluster.create_namespace(name)
    return name


def make_source(creds: KubeCredentials, **settings: Any) -> tuple[KubeJobSetSource, ProviderMetrics]:
    metrics = ProviderMetrics()
    source = KubeJobSetSource(creds, metrics, JsonLogger(min_level="warning"), WatchSettings(**settings))
    return source, metrics


@pytest.fixture
def kube_source(kube_cluster: KubeCluster) -> Iterator[tuple[KubeJobSetSource, ProviderMetrics]]:
    source, metrics = make_source(from_kubeconfig(kube_cluster.kubeconfig))
    yield source, metrics
    source.stop()


def value(s: Any, url: str, key: str) -> dict[str, Any]:
    item = items(post(s, url, [key]))[key]
    assert "error" not in item, item
    return item["value"]


def test_answers_follow_status_changes_and_deletion_within_one_second(
    kube_cluster: KubeCluster, namespace: str, kube_source: Any, start_provider: StartProvider, pki: Pki
) -> None:
    source, metrics = kube_source
    kube_cluster.apply_jobset(namespace, "train", REPLICATED)
    running = start_provider(source)
    assert source.wait_ready(10)
    s = session(str(pki.ca))
    key = f"{namespace}/train"
    assert value(s, running.url, key) == {"found": True, "activeReplicatedJobs": []}
    gets_after_sync = metrics.api_calls.value(verb="get", code="200") + metrics.api_calls.value(verb="get", code="404")

    timeline = [
        (status(1, 2), ["launcher", "node"]),
        (status(0, 2), ["node"]),
        (status(0, 0), []),
    ]
    for replicated_status, expected in timeline:
        kube_cluster.set_jobset_status(namespace, "train", replicated_status)
        took = wait_until(lambda e=expected: value(s, running.url, key)["activeReplicatedJobs"] == e, timeout=1.0)
        assert took < 1.0

    assert kube_cluster.delete_jobset(namespace, "train")
    wait_until(lambda: value(s, running.url, key) == {"found": False, "activeReplicatedJobs": []}, timeout=1.0)
    # steady state: every answer came from the watch cache
    gets_now = metrics.api_calls.value(verb="get", code="200") + metrics.api_calls.value(verb="get", code="404")
    assert gets_now == gets_after_sync
    assert metrics.api_calls.value(verb="list", code="200") == 1


def test_unknown_key_is_not_found_from_the_synced_cache_without_api_calls(
    namespace: str, kube_source: Any, start_provider: StartProvider, pki: Pki
) -> None:
    source, metrics = kube_source
    running = start_provider(source)
    assert source.wait_ready(10)
    wait_until(lambda: source.synced, timeout=5)
    body = post(session(str(pki.ca)), running.url, [f"{namespace}/nothing-{i}" for i in range(10)])
    assert all(item["value"] == {"found": False, "activeReplicatedJobs": []} for item in body["response"]["items"])
    assert metrics.api_calls.value(verb="get", code="404") == 0
    assert metrics.api_calls.value(verb="get", code="200") == 0


def test_live_get_answers_keys_before_the_first_list(kube_cluster: KubeCluster, namespace: str) -> None:
    kube_cluster.apply_jobset(namespace, "early", REPLICATED)
    kube_cluster.set_jobset_status(namespace, "early", status(1, 0))
    source, metrics = make_source(from_kubeconfig(kube_cluster.kubeconfig))  # never started: not synced
    assert not source.ready
    found = source.lookup(namespace, "early")
    missing = source.lookup(namespace, "absent")
    assert found.error == "" and found.found
    assert found.answer()["activeReplicatedJobs"] == ["launcher"]
    assert missing.error == "" and not missing.found
    assert metrics.api_calls.value(verb="get", code="200") == 1
    assert metrics.api_calls.value(verb="get", code="404") == 1


def test_unreachable_api_before_sync_is_a_per_key_error(pki: Pki, start_provider: StartProvider) -> None:
    creds = KubeCredentials(server="https://127.0.0.1:9", ca_file=str(pki.ca), token="x")
    source, _ = make_source(creds, backoff_initial=5.0)
    running = start_provider(source)
    body = post(session(str(pki.ca)), running.url, ["team-a/job1"])
    (item,) = body["response"]["items"]
    assert "value" not in item and "Kubernetes API GET failed" in item["error"]
    assert session(str(pki.ca)).get(running.url + "readyz", timeout=5).status_code == 503


def test_in_cluster_service_account_credentials(
    kube_cluster: KubeCluster, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text(kube_cluster.token + "\n")
    shutil.copy(kube_cluster.ca_file, tmp_path / "ca.crt")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(kube_cluster.apiserver_port))
    kube_cluster.apply_jobset(namespace, "incluster", REPLICATED)
    source, _ = make_source(in_cluster(tmp_path), namespace=namespace)
    source.start()
    try:
        assert source.wait_ready(10)
        assert source.lookup(namespace, "incluster").found
        assert len(source) == 1
    finally:
        source.stop()


def test_stop_just_after_the_first_list_ends_the_watch_thread(kube_cluster: KubeCluster, namespace: str) -> None:
    """A stop() that comes while the watch is being opened (the first list done, its response not there yet) ends
    the watcher: it found no response to close, and the thread stayed blocked on the stream past stop()."""
    for _ in range(3):
        source, _metrics = make_source(from_kubeconfig(kube_cluster.kubeconfig), namespace=namespace)
        source.start()
        assert source.wait_ready(10)
        source.stop(timeout=3)
        assert source._thread is not None and not source._thread.is_alive()


def test_watch_resumes_from_resource_version_when_the_stream_times_out(
    kube_cluster: KubeCluster, namespace: str
) -> None:
    source, metrics = make_source(
        from_kubeconfig(kube_cluster.kubeconfig), namespace=namespace, watch_timeout_seconds=1
    )
    kube_cluster.apply_jobset(namespace, "resume", REPLICATED)
    source.start()
    try:
        assert source.wait_ready(10)
        wait_until(lambda: metrics.watch_restarts.value(reason="stream_ended") >= 2, timeout=10)
        kube_cluster.set_jobset_status(namespace, "resume", status(0, 1))

        def active() -> list[str]:
            lookup = source.lookup(namespace, "resume")
            return [] if lookup.value is None else lookup.value["activeReplicatedJobs"]

        wait_until(lambda: source.synced and active() == ["node"], timeout=1.0)
        assert metrics.api_calls.value(verb="list", code="200") == 1  # resumed, never re-listed
        assert metrics.api_calls.value(verb="watch", code="200") >= 3
    finally:
        source.stop()


def test_too_old_resource_version_is_410_gone(kube_cluster: KubeCluster, namespace: str) -> None:
    source, _ = make_source(from_kubeconfig(kube_cluster.kubeconfig), namespace=namespace)
    source._resource_version = "1"  # older than anything the apiserver's watch cache holds
    with pytest.raises(WatchGone):
        source._watch()


def test_apiserver_restart_recovers_and_serves_no_wrong_answer(
    kube_cluster: KubeCluster, namespace: str, kube_source: Any, start_provider: StartProvider, pki: Pki
) -> None:
    source, metrics = kube_source
    kube_cluster.apply_jobset(namespace, "restart", REPLICATED)
    kube_cluster.set_jobset_status(namespace, "restart", status(0, 2))
    running = start_provider(source)
    assert source.wait_ready(10)
    key = f"{namespace}/restart"
    s = session(str(pki.ca))
    wait_until(lambda: value(s, running.url, key)["activeReplicatedJobs"] == ["node"], timeout=1.0)

    answers: list[tuple[float, dict[str, Any]]] = []
    stop = threading.Event()

    def poll() -> None:
        poller = session(str(pki.ca))
        while not stop.is_set():
            answers.append((time.monotonic(), items(post(poller, running.url, [key]))[key]))
            time.sleep(0.01)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        kube_cluster.restart_apiserver()
        wait_until(lambda: source.synced, timeout=30)
        recovered_at = time.monotonic()
        patch_started = time.monotonic()
        kube_cluster.set_jobset_status(namespace, "restart", status(0, 0))
        patch_done = time.monotonic()
        wait_until(lambda: value(s, running.url, key)["activeReplicatedJobs"] == [], timeout=1.0)
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(5)

    errors = [item for _, item in answers if "error" in item]
    for at, item in answers:
        if "error" in item:
            continue
        truth_before, truth_after = ["node"], []
        got = item["value"]["activeReplicatedJobs"]
        assert item["value"]["found"] is True
        if at < patch_started:
            assert got == truth_before, (at, item)
        elif at > patch_done + 1.0:
            assert got == truth_after, (at, item)
        else:
            assert got in (truth_before, truth_after)
    assert errors, "the restart window produced no error answers: was the cache trusted while the watch was broken?"
    assert metrics.watch_restarts.value(reason="error") + metrics.watch_restarts.value(reason="gone") >= 1
    assert metrics.api_calls.value(verb="list", code="200") >= 2  # re-listed after the break
    assert recovered_at > 0


# ------------------------------------------------------------------------------------- fresh or fail (issue 40)
STALENESS = 2.0
ACTIVE = ["launcher", "node"]


def test_sigstopped_apiserver_gives_no_stale_inactive_answer_past_the_staleness_bound(
    kube_cluster: KubeCluster, namespace: str, start_provider: StartProvider, pki: Pki
) -> None:
    """The provider's kube-apiserver is frozen with SIGSTOP (a half-open server: its sockets stay open, nothing
    answers) while a second kube-apiserver on the same etcd marks the JobSet active. Past the staleness bound
    no answer may say "inactive": each is an error (the rule denies) until the frozen server is back; then the
    provider answers "active". Before the fix 383 of 410 answers said "inactive" for 390 s."""
    kube_cluster.apply_jobset(namespace, "frozen", REPLICATED)
    kube_cluster.set_jobset_status(namespace, "frozen", status(0, 0))
    source, metrics = make_source(
        from_kubeconfig(kube_cluster.kubeconfig), namespace=namespace, max_staleness=STALENESS
    )
    running = start_provider(source)
    key = f"{namespace}/frozen"
    answers: list[tuple[float, dict[str, Any]]] = []
    stop = threading.Event()

    def poll() -> None:
        poller = session(str(pki.ca))
        while not stop.is_set():
            sent = time.monotonic()
            answers.append((sent, items(post(poller, running.url, [key]))[key]))
            time.sleep(0.02)

    with kube_cluster.second_apiserver() as other:
        source.start()
        s = session(str(pki.ca))
        assert source.wait_ready(15)
        wait_until(lambda: source.fresh and value(s, running.url, key)["activeReplicatedJobs"] == [], timeout=5)
        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            with kube_cluster.frozen_apiserver():
                frozen_at = time.monotonic()
                other.set_jobset_status(namespace, "frozen", status(1, 2))
                activated_at = time.monotonic()
                time.sleep(STALENESS + 4.0)
                thawed_at = time.monotonic()
            took = wait_until(lambda: answers[-1][1].get("value", {}).get("activeReplicatedJobs") == ACTIVE, timeout=60)
            correct_at = time.monotonic()
            time.sleep(0.5)
        finally:
            stop.set()
            thread.join(10)
            source.stop()

    def inactive(item: dict[str, Any]) -> bool:
        return "value" in item and item["value"]["activeReplicatedJobs"] == []

    past_bound = [(at, item) for at, item in answers if at > activated_at + STALENESS]
    stale = [(round(at - frozen_at, 2), item) for at, item in past_bound if inactive(item)]
    frozen_window = [item for at, item in answers if activated_at + STALENESS < at < thawed_at]
    print(
        f"\nfrozen {thawed_at - frozen_at:.1f}s, {len(answers)} answers, {len(past_bound)} past the bound, "
        f"{len(stale)} stale inactive, {sum('error' in i for i in frozen_window)}/{len(frozen_window)} errors while "
        f"frozen past the bound, correct {took:.1f}s after the thaw"
    )
    assert frozen_window, "no lookup was answered while the API server was frozen"
    assert not stale, stale[:3]
    # an error, or (a GET sent just before the thaw and answered after it) the new state; never "inactive"
    assert all("error" in item or item["value"]["activeReplicatedJobs"] == ACTIVE for item in frozen_window)
    assert sum("error" in item for item in frozen_window) >= len(frozen_window) - 1, frozen_window
    assert metrics.watch_restarts.value(reason="stale") >= 1
    assert metrics.api_calls.value(verb="list", code="200") >= 2  # re-listed (a quorum read) after the thaw
    after = [item for at, item in answers if at > correct_at]
    assert after and all(item.get("value", {}).get("activeReplicatedJobs") == ACTIVE for item in after), after[:3]


def test_namespace_scoped_provider_answers_other_namespaces_with_an_error(
    kube_cluster: KubeCluster, start_provider: StartProvider, pki: Pki
) -> None:
    """`--namespace team-a` cannot see team-b: a lookup there is a per-key error (deny), never found:false,
    from the fresh cache and from the live GET path alike; its own namespace answers as before."""
    stamp = f"{int(time.time()) % 100000}-{next(_ids)}"
    team_a, team_b = f"team-a-{stamp}", f"team-b-{stamp}"
    for name in (team_a, team_b):
        kube_cluster.create_namespace(name)
    kube_cluster.apply_jobset(team_b, "busy", REPLICATED)
    kube_cluster.set_jobset_status(team_b, "busy", status(1, 2))
    kube_cluster.apply_jobset(team_a, "mine", REPLICATED)
    source, _ = make_source(from_kubeconfig(kube_cluster.kubeconfig), namespace=team_a)
    running = start_provider(source)
    s = session(str(pki.ca))
    keys = [f"{team_b}/busy", f"{team_b}/busy#uid-1", f"{team_a}/mine", f"{team_a}/absent"]

    def check() -> None:
        got = items(post(s, running.url, keys))
        for key in keys[:2]:
            assert "value" not in got[key] and "cannot see namespace" in got[key]["error"], got[key]
            assert repr(team_a) in got[key]["error"]
        assert got[keys[2]]["value"] == {"found": True, "activeReplicatedJobs": []}
        assert got[keys[3]]["value"] == {"found": False, "activeReplicatedJobs": []}

    check()  # before the first list: the live GET path
    source.start()
    try:
        assert source.wait_ready(15)
        wait_until(lambda: source.fresh, timeout=5)
        check()  # the fresh cache (the server's in-memory fast path)
        assert source.lookup(team_b, "busy").error
    finally:
        source.stop()
