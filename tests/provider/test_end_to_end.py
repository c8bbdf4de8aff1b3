"""Gatekeeper runner -> external_data -> provider over TLS 1.3 -> real kube-apiserver.

An override change is denied while a replicated job of the TrainJob's JobSet is active and admitted
once the JobSet is inactive, with the hand-written template (rule A's call pattern) and, when the
generated bundle exists, with the external-data variant of bundles/gatekeeper/v2.0 under Gatekeeper's
default response cache.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from kubeflow_trainer_policy.catalog.trainjob_fixtures import runtime
from kubeflow_trainer_policy.gatekeeper.external_data import HttpsProvider, ResponseCache
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner, ReviewResult
from kubeflow_trainer_policy.paths import external_data_bundle_dir
from kubeflow_trainer_policy_provider.kube_auth import from_kubeconfig
from kubeflow_trainer_policy_provider.kube_source import KubeJobSetSource
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.reader import Document
from tests.admission import admission_review
from tests.gatekeeper.helpers import trainjob
from tests.kube.cluster import KubeCluster
from tests.provider.conftest import Pki, StartProvider
from tests.provider.helpers import wait_until

pytestmark = pytest.mark.kube

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUNDLE_V20 = Path(__file__).resolve().parents[2] / "bundles" / "gatekeeper" / "v2.0"
PROVIDER = "trainer-jobset-provider"
_ids = itertools.count()

OLD_OVERRIDES = [{"targetJobs": [{"name": "node"}], "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}]
NEW_OVERRIDES = [{"targetJobs": [{"name": "node"}], "nodeSelector": {"zone": "a"}}]


def status(node_active: int) -> list[dict[str, Any]]:
    return [
        {"name": "launcher", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
        {"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": node_active, "suspended": 0},
    ]


def override_update(namespace: str, name: str) -> Any:
    """A new admission request each time: its own uid, as the API server sends."""
    old = trainjob(name, namespace, runtimeRef={"name": "torch"}, suspend=True, podSpecOverrides=OLD_OVERRIDES)
    new = trainjob(name, namespace, runtimeRef={"name": "torch"}, suspend=True, podSpecOverrides=NEW_OVERRIDES)
    review = admission_review("UPDATE", new, old, uid=f"e2e-{next(_ids)}")
    return request_from_document(Document("test", review))


def policy_sets() -> list[tuple[str, list[Path], float]]:
    """(label, paths, cache TTL): the hand-written template's key repeats, so it needs TTL 0; the bundle's
    external-data variant keys each request by its uid and runs with Gatekeeper's default 3-minute cache."""
    sets = [("hand-written", [FIXTURES / "jobset-active-template.yaml"], 0.0)]
    if external_data_bundle_dir("v2.0").is_dir():
        sets.append(("bundles/gatekeeper-external-data/v2.0", [external_data_bundle_dir("v2.0")], 180.0))
    return sets


@pytest.mark.parametrize(("label", "paths", "ttl"), policy_sets(), ids=[label for label, _, _ in policy_sets()])
def test_override_change_denied_while_active_admitted_once_inactive(
    kube_cluster: KubeCluster, start_provider: StartProvider, pki: Pki, label: str, paths: list[Path], ttl: float
) -> None:
    namespace, name = f"e2e-{int(time.time()) % 100000}-{next(_ids)}", "train"
    kube_cluster.create_namespace(namespace)
    kube_cluster.apply_jobset(namespace, name, [{"name": "launcher", "replicas": 1}, {"name": "node", "replicas": 2}])
    kube_cluster.set_jobset_status(namespace, name, status(node_active=2))

    metrics = ProviderMetrics()
    source = KubeJobSetSource(from_kubeconfig(kube_cluster.kubeconfig), metrics, JsonLogger(min_level="warning"))
    running = start_provider(source)
    assert source.wait_ready(10)

    policy_set = load_policy_set(paths)
    client = HttpsProvider(running.url, str(pki.ca), timeout=2.0)
    # Gatekeeper's sync also holds the TrainJob's runtime: the bundle's runtime checks read it.
    torch = runtime("torch")
    with GatekeeperRunner(
        policy_set, {PROVIDER: client}, cache=ResponseCache(ttl_seconds=ttl), objects=[torch]
    ) as runner:

        def review() -> ReviewResult:
            return runner.review(override_update(namespace, name))

        denied = review()
        assert not denied.errors and not denied.allowed
        msgs = [v.msg for v in denied.violations]
        assert any("ReplicatedJob node is still active" in m for m in msgs), msgs
        assert not any("launcher" in m for m in msgs)

        kube_cluster.set_jobset_status(namespace, name, status(node_active=0))
        wait_until(lambda: review().allowed, timeout=1.0)
        assert review().violations == []

        # the JobSet is gone: "not found" is inactive, still admitted
        kube_cluster.delete_jobset(namespace, name)
        wait_until(lambda: review().allowed, timeout=1.0)
        assert runner.external_data.calls >= 4
    assert metrics.api_calls.value(verb="get", code="200") == 0  # every answer came from the watch cache
