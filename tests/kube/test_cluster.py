"""The test cluster itself: a real kube-apiserver backed by a real etcd."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
import requests

from tests.kube.cluster import KubeCluster
from tests.kube.kubectl import kubectl

pytestmark = pytest.mark.kube


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_serves_tls_with_own_ca_and_requires_token(kube_cluster: KubeCluster) -> None:
    assert kube_cluster.api("GET", "/readyz").status_code == 200
    version = kube_cluster.api_ok("GET", "/version")
    assert version["major"] == "1" and version["minor"].startswith("20")

    anonymous = requests.Session()
    anonymous.trust_env = False
    resp = anonymous.get(f"{kube_cluster.url}/api/v1/namespaces", verify=str(kube_cluster.ca_file), timeout=10)
    assert resp.status_code in (401, 403)
    with pytest.raises(requests.exceptions.SSLError):
        anonymous.get(f"{kube_cluster.url}/readyz", verify=True, timeout=10)


def test_crds_are_served(kube_cluster: KubeCluster) -> None:
    for path in (
        "/apis/jobset.x-k8s.io/v1alpha2/jobsets",
        "/apis/trainer.kubeflow.org/v1alpha1/trainjobs",
        "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes",
        "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
    ):
        assert kube_cluster.api_ok("GET", path)["kind"].endswith("List"), path
    resources = kube_cluster.api_ok("GET", "/apis/trainer.kubeflow.org/v1alpha1")["resources"]
    namespaced = {r["name"]: r["namespaced"] for r in resources}
    assert namespaced["clustertrainingruntimes"] is False
    assert namespaced["trainingruntimes"] is True


def test_jobset_lifecycle_with_status_and_apiserver_restart(kube_cluster: KubeCluster) -> None:
    namespace, name = _unique("ns"), "trainer-node"
    kube_cluster.create_namespace(namespace)
    kube_cluster.create_namespace(namespace)  # idempotent

    created = kube_cluster.apply_jobset(
        namespace,
        name,
        replicated_jobs=[{"name": "node", "replicas": 2, "template": {"spec": {"parallelism": 1}}}],
        labels={"trainer.kubeflow.org/trainjob-name": "tj"},
    )
    assert created["spec"]["replicatedJobs"][0]["replicas"] == 2
    assert "status" not in created or not created["status"]

    # the main resource ignores status; only the subresource sets it
    replaced = kube_cluster.apply({**created, "status": {"replicatedJobsStatus": [{"name": "ignored"}]}})
    assert not replaced.get("status")

    status = [{"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}]
    updated = kube_cluster.set_jobset_status(namespace, name, status)
    assert updated["status"]["replicatedJobsStatus"] == status

    read = kube_cluster.get_jobset(namespace, name)
    assert read is not None
    assert read["status"]["replicatedJobsStatus"] == status
    assert read["spec"]["replicatedJobs"][0]["template"] == {"spec": {"parallelism": 1}}

    # spec updates keep the status
    kube_cluster.apply_jobset(namespace, name, replicated_jobs=[{"name": "node", "replicas": 3}])
    read = kube_cluster.get_jobset(namespace, name)
    assert read is not None
    assert read["spec"]["replicatedJobs"] == [{"name": "node", "replicas": 3}]
    assert read["status"]["replicatedJobsStatus"] == status

    url_before = kube_cluster.url
    elapsed = kube_cluster.restart_apiserver()
    assert kube_cluster.url == url_before
    assert elapsed < 60
    read = kube_cluster.get_jobset(namespace, name)
    assert read is not None and read["status"]["replicatedJobsStatus"] == status

    assert kube_cluster.delete_jobset(namespace, name) is True
    assert kube_cluster.get_jobset(namespace, name) is None
    assert kube_cluster.delete_jobset(namespace, name) is False


def test_cluster_scoped_runtime_and_namespaced_trainjob(kube_cluster: KubeCluster) -> None:
    namespace = _unique("ns")
    kube_cluster.create_namespace(namespace)
    runtime_name = _unique("torch")
    kube_cluster.apply(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": runtime_name},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}}},
        }
    )
    kube_cluster.apply(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": namespace},
            "spec": {"runtimeRef": {"name": runtime_name, "kind": "ClusterTrainingRuntime"}},
        }
    )
    trainjob = kube_cluster.get("trainer.kubeflow.org/v1alpha1", "TrainJob", namespace, "tj")
    assert trainjob is not None and trainjob["spec"]["runtimeRef"]["name"] == runtime_name
    assert kube_cluster.delete("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", None, runtime_name)


def test_kubeconfig_works_with_kubectl(kube_cluster: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("kubecache")
    proc = subprocess.run(
        [kubectl(), "--kubeconfig", str(kube_cluster.kubeconfig), "get", "jobsets.jobset.x-k8s.io", "-A", "-o", "name"],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KUBECACHEDIR": str(cache), "HOME": str(cache)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_crd_schema_with_empty_string_default_is_accepted(kube_cluster: KubeCluster) -> None:
    # The reason kube-apiserver is built with Go 1.15: a Go 1.19 build rejects `default: ""`.
    group = f"{uuid.uuid4().hex[:8]}.example.test"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"mode": {"type": "string", "default": ""}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    created = kube_cluster.api_ok("POST", path, crd)
    assert created["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mode"] == {
        "type": "string",
        "default": "",
    }
    kube_cluster.api_ok("DELETE", f"{path}/widgets.{group}")
