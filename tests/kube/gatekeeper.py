"""A real Gatekeeper manager (webhook + audit + controllers) against a test KubeCluster.

The binary is the pinned release's manager, `go install`ed from its module root by the project's installer
(`python -m kubeflow_trainer_policy.pinned.live`); its CRDs are the ones that release's chart ships
(manifest_staging/charts/gatekeeper/crds in the module). It runs out of cluster as the chart runs it in one: the
webhook serves the test CA's certificate for 127.0.0.1 (--disable-cert-rotation, --cert-dir), POD_NAMESPACE names
its namespace (exempt, and labelled as the chart labels it), and the ValidatingWebhookConfiguration is the chart's
(failurePolicy Ignore, timeoutSeconds 3, CREATE and UPDATE of every resource) with a url instead of a Service.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from kubeflow_trainer_policy.pinned.install import cache_root, install
from kubeflow_trainer_policy.pinned.versions import Tool
from tests.kube.cluster import KubeCluster, KubeClusterError, _Process
from tests.support import free_port

NAMESPACE = "gatekeeper-system"
POD_NAME = "gatekeeper-test-0"
WEBHOOK_CONFIG = "gatekeeper-validating-webhook-configuration"
WEBHOOK_API = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
READY_TIMEOUT_S = 120.0
# As Gatekeeper's chart ships the validating webhook (values.yaml: validatingWebhookFailurePolicy: Ignore,
# validatingWebhookTimeoutSeconds: 3).
FAILURE_POLICY = "Ignore"
TIMEOUT_SECONDS = 3


def module_dir(tool: Tool) -> Path:
    """The release's module in the Go module cache (downloaded by its install)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{tool.module}@{tool.version}"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOWORK": "off"},
        cwd=cache_root(),
    )
    info = json.loads(out.stdout or "{}")
    if "Dir" not in info:
        raise KubeClusterError(f"go mod download {tool.module}@{tool.version}: {out.stderr.strip()[-500:]}")
    return Path(info["Dir"])


def _create_pod_object(cluster: KubeCluster) -> None:
    """The Pod object POD_NAME names: Gatekeeper's status objects are owned by their manager's Pod, and its
    controllers fail every reconcile without it. Nothing schedules it (no scheduler, no kubelet)."""
    base = f"/api/v1/namespaces/{NAMESPACE}"
    for path, body in (
        (f"{base}/serviceaccounts", {"metadata": {"name": "default"}}),
        (
            f"{base}/pods",
            {
                "metadata": {"name": POD_NAME},
                "spec": {
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "manager", "image": "gatekeeper"}],
                },
            },
        ),
    ):
        response = cluster.api("POST", path, body)
        if not response.ok and response.status_code != 409:
            raise KubeClusterError(f"POST {path}: HTTP {response.status_code}: {response.text[:500]}")


def has_vap_api(cluster: KubeCluster) -> bool:
    resp = cluster.api("GET", "/apis/admissionregistration.k8s.io/v1")
    return resp.ok and any(r["name"] == "validatingadmissionpolicies" for r in resp.json()["resources"])


@dataclass
class Gatekeeper:
    cluster: KubeCluster
    tool: Tool
    port: int
    health_port: int
    process: _Process

    @classmethod
    def start(cls, cluster: KubeCluster, tool: Tool, *, audit_interval_s: int = 5) -> Gatekeeper:
        binary = install(tool)
        crds = module_dir(tool) / "manifest_staging" / "charts" / "gatekeeper" / "crds"
        cluster.install_crds(crds, timeout_s=60)
        cluster.create_namespace(NAMESPACE, {"admission.gatekeeper.sh/ignore": "no-self-managing"})
        _create_pod_object(cluster)
        work = cluster.workdir / f"gatekeeper-{tool.version}"
        certs = work / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        # the API server's own serving certificate is for 127.0.0.1, signed by the test CA
        shutil.copy(cluster.workdir / "apiserver.crt", certs / "tls.crt")
        shutil.copy(cluster.workdir / "apiserver.key", certs / "tls.key")
        shutil.copy(cluster.ca_file, certs / "ca.crt")
        audit_cache = work / "audit"
        audit_cache.mkdir(exist_ok=True)
        port, health_port = free_port(), free_port()
        argv = [
            str(binary),
            f"--kubeconfig={cluster.kubeconfig}",
            f"--port={port}",
            "--host=127.0.0.1",
            f"--health-addr=127.0.0.1:{health_port}",
            "--metrics-addr=0",
            "--prometheus-port=0",
            f"--cert-dir={certs}",
            "--disable-cert-rotation",
            "--log-denies",
            "--operation=webhook",
            "--operation=audit",
            "--operation=status",
            "--operation=generate",  # the template controller creates Constraint CRDs only with it
            f"--audit-interval={audit_interval_s}",
            f"--api-cache-dir={audit_cache}",  # the chart mounts an emptyDir at the default, /tmp/audit
            f"--exempt-namespace={NAMESPACE}",
        ]
        if not has_vap_api(cluster):
            # Without the API, the default true leaves every Constraint in an error loop (issue 41).
            argv += ["--default-create-vap-binding-for-constraints=false", "--default-create-vap-for-templates=false"]
        env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "POD_NAME": POD_NAME, "NAMESPACE": NAMESPACE}
        process = _Process("gatekeeper", argv, work / "gatekeeper.log", env=env)
        gatekeeper = cls(cluster, tool, port, health_port, process)
        gatekeeper._start()
        return gatekeeper

    def _start(self) -> None:
        self.process.start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._ready():
            if not self.process.alive():
                raise KubeClusterError(f"gatekeeper exited during startup:\n{self.process.log_tail(40)}")
            if time.monotonic() > deadline:
                self.stop()
                raise KubeClusterError(f"gatekeeper not ready in {READY_TIMEOUT_S:.0f} s:\n{self.process.log_tail()}")
            time.sleep(0.5)
        self.register_webhook()

    def _ready(self) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2, proxies={}).ok
        except requests.RequestException:
            return False

    def register_webhook(self) -> None:
        ca_bundle = base64.b64encode(self.cluster.ca_file.read_bytes()).decode()
        config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK_CONFIG},
            "webhooks": [
                {
                    "name": "validation.gatekeeper.sh",
                    "clientConfig": {"url": f"https://127.0.0.1:{self.port}/v1/admit", "caBundle": ca_bundle},
                    "rules": [
                        {
                            "apiGroups": ["*"],
                            "apiVersions": ["*"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["*"],
                        }
                    ],
                    "namespaceSelector": {
                        "matchExpressions": [{"key": "admission.gatekeeper.sh/ignore", "operator": "DoesNotExist"}]
                    },
                    "failurePolicy": FAILURE_POLICY,
                    "timeoutSeconds": TIMEOUT_SECONDS,
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1", "v1beta1"],
                    "matchPolicy": "Exact",
                }
            ],
        }
        self.cluster.apply(config)

    def log_text(self) -> str:
        return self.process.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.cluster.api("DELETE", f"{WEBHOOK_API}/{WEBHOOK_CONFIG}")
        self.process.stop()
