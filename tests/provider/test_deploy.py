"""deploy/: kustomize renders, and the objects say what deploy/README.md promises."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from provider.http_server import MAX_BODY_BYTES
from provider.server import DEFAULT_REQUEST_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BUNDLE_PROVIDER = REPO / "bundles" / "gatekeeper" / "v2.0" / "trainjob-override-mutability" / "provider.yaml"


def render(path: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    assert shutil.which("kubectl"), "kubectl is part of this machine image (Debian package kubectl); it is missing"
    out = subprocess.run(
        ["kubectl", "kustomize", str(path)],
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
    assert container["args"][:2] == ["provider", "serve"]
    assert pod["serviceAccountName"] == objects["ServiceAccount"]["metadata"]["name"]
    assert MAX_BODY_BYTES == 1 << 20 and objects["Provider"]["spec"]["timeout"] > DEFAULT_REQUEST_TIMEOUT


def test_rbac_is_read_only_on_jobsets(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    assert objects["ClusterRole"]["rules"] == [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list", "watch"]}
    ]
    (subject,) = objects["ClusterRoleBinding"]["subjects"]
    assert subject["name"] == objects["ServiceAccount"]["metadata"]["name"]


def test_provider_object_matches_the_service_and_the_bundle(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    provider, service = objects["Provider"], objects["Service"]
    assert "namespace" not in provider["metadata"]  # cluster-scoped
    url = f"https://{service['metadata']['name']}.{service['metadata']['namespace']}:8443/"
    assert provider["spec"]["url"] == url
    if BUNDLE_PROVIDER.exists():
        bundled = yaml.safe_load(BUNDLE_PROVIDER.read_text())
        assert bundled["metadata"]["name"] == provider["metadata"]["name"]
        assert bundled["spec"]["url"] == provider["spec"]["url"]


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
