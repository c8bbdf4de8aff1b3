"""deploy/: kustomize renders, and the objects say what deploy/README.md promises."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509

from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy_provider.http_server import MAX_BODY_BYTES
from kubeflow_trainer_policy_provider.server import DEFAULT_REQUEST_TIMEOUT
from tests.kube.kubectl import kubectl

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def render(path: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    out = subprocess.run(
        [kubectl(), "kustomize", str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kube-cache")},
    ).stdout
    return {doc["kind"]: doc for doc in yaml.safe_load_all(out) if doc}


def test_deployment_is_hardened_and_probed(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    deployment = objects["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["args"][:1] == ["serve"]
    assert pod["serviceAccountName"] == objects["ServiceAccount"]["metadata"]["name"]
    assert MAX_BODY_BYTES == 1 << 20 and provider_yaml(tmp_path)["spec"]["timeout"] > DEFAULT_REQUEST_TIMEOUT


def test_rbac_is_read_only_on_jobsets(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    assert objects["ClusterRole"]["rules"] == [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list", "watch"]}
    ]
    (subject,) = objects["ClusterRoleBinding"]["subjects"]
    assert subject["name"] == objects["ServiceAccount"]["metadata"]["name"]


def provider_yaml(tmp_path: Path) -> dict[str, Any]:
    """The Provider object `trainer-policy certs --provider-yaml` writes (deploy/README.md, step 2)."""
    out = tmp_path / "pki"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["certs", "--out-dir", str(out), "--provider-yaml", str(out / "provider.yaml")]) == 0
    return yaml.safe_load((out / "provider.yaml").read_text())


def test_provider_object_matches_the_service_and_has_a_real_ca_bundle(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    assert "Provider" not in objects, "no placeholder Provider: Gatekeeper refuses a caBundle that does not decode"
    provider, service = provider_yaml(tmp_path), objects["Service"]
    assert "namespace" not in provider["metadata"]  # cluster-scoped
    url = f"https://{service['metadata']['name']}.{service['metadata']['namespace']}:8443/"
    assert provider["spec"]["url"] == url
    pem = base64.b64decode(provider["spec"]["caBundle"], validate=True)
    assert (
        x509.load_pem_x509_certificate(pem).subject
        == x509.load_pem_x509_certificate((tmp_path / "pki" / "ca.crt").read_bytes()).subject
    )


def test_no_gatekeeper_bundle_ships_a_provider() -> None:
    bundles = REPO / "bundles" / "gatekeeper"
    providers = [
        p
        for p in bundles.rglob("*.yaml")
        for d in yaml.safe_load_all(p.read_text())
        if d and d.get("kind") == "Provider"
    ]
    assert providers == []


def test_components_render_when_enabled_as_documented(tmp_path: Path) -> None:
    copy = tmp_path / "provider"
    shutil.copytree(DEPLOY / "provider", copy)
    text = (copy / "kustomization.yaml").read_text()
    for line in ("components:", "  - components/mtls", "  - components/cert-manager"):
        assert f"# {line}" in text
        text = text.replace(f"# {line}", line)
    (copy / "kustomization.yaml").write_text(text)
    objects = render(copy, tmp_path)
    args = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--client-ca=/etc/trainer-policy/client-ca/ca.crt" in args
    assert objects["Certificate"]["metadata"]["namespace"] == "trainer-policy-system"
