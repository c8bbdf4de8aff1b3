"""deploy/: kustomize renders, and the objects say what deploy/README.md promises."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy_provider.http_server import MAX_BODY_BYTES
from kubeflow_trainer_policy_provider.server import DEFAULT_REQUEST_TIMEOUT
from tests.kube.cluster import KubeCluster
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


def _with_components(tmp_path: Path, *names: str) -> Path:
    """deploy/provider with the components enabled as its kustomization's comment says to."""
    copy = tmp_path / "provider"
    shutil.copytree(DEPLOY / "provider", copy)
    text = (copy / "kustomization.yaml").read_text()
    assert "# components:" in text
    text = text.replace("# components:", "components:")
    for name in names:
        assert f"#   - components/{name}" in text
        text = text.replace(f"#   - components/{name}", f"  - components/{name}")
    (copy / "kustomization.yaml").write_text(text)
    return copy


def _args(objects: dict[str, dict[str, Any]]) -> list[str]:
    return objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]


def test_mtls_is_on_by_default_and_a_component_turns_it_off(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    assert "--client-ca=/etc/trainer-policy/client-ca/ca.crt" in _args(objects)
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    assert {"name": "client-ca", "secret": {"secretName": "gatekeeper-ca"}} in pod["volumes"]
    plain = render(_with_components(tmp_path, "without-mtls"), tmp_path)
    assert not any(a.startswith("--client-ca") for a in _args(plain))
    plain_pod = plain["Deployment"]["spec"]["template"]["spec"]
    assert "client-ca" not in {v["name"] for v in plain_pod["volumes"]}
    assert "client-ca" not in {m["name"] for m in plain_pod["containers"][0]["volumeMounts"]}


def test_cert_manager_component_renders_with_mtls(tmp_path: Path) -> None:
    objects = render(_with_components(tmp_path, "cert-manager"), tmp_path)
    assert "--client-ca=/etc/trainer-policy/client-ca/ca.crt" in _args(objects)
    assert objects["Certificate"]["metadata"]["namespace"] == "trainer-policy-system"


def test_network_policy_admits_only_gatekeeper_to_the_provider_port(tmp_path: Path) -> None:
    objects = render(DEPLOY, tmp_path)
    policy, deployment = objects["NetworkPolicy"], objects["Deployment"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ports = {p["name"]: p["containerPort"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
    provider, health = policy["spec"]["ingress"]
    assert [p["port"] for p in provider["ports"]] == ["https"] and ports["https"] == 8443
    assert provider["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gatekeeper-system"}}}
    ]
    # the health port (probes and /metrics only; the HTTPS port no longer serves them) is open to the kubelet
    assert [p["port"] for p in health["ports"]] == ["health"] and "from" not in health
    assert "--health-port=8081" in _args(objects) and ports["health"] == 8081


def test_namespace_enforces_the_restricted_pod_security_profile(tmp_path: Path) -> None:
    labels = render(DEPLOY, tmp_path)["Namespace"]["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"


def _dockerignore_excludes(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last pattern matching the path or one of its parent folders decides."""

    def regex(pattern: str) -> re.Pattern[str]:
        out, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out, i = out + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pattern[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif pattern[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(pattern[i]), i + 1
        return re.compile(out)

    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for line in patterns:
        negate = line.startswith("!")
        pattern = regex(line.lstrip("!").strip("/"))
        if any(pattern.fullmatch(c) for c in candidates):
            excluded = not negate
    return excluded


def test_dockerignore_keeps_the_build_context_to_what_the_image_installs() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    containerfile = (DEPLOY / "provider" / "Containerfile").read_text()
    copied = [w for line in containerfile.splitlines() if line.startswith("COPY ") for w in line.split()[1:-1]]
    assert copied and "." not in copied
    for source in copied:
        sample = (
            next(p for p in sorted((REPO / source).rglob("*")) if p.is_file()) if (REPO / source).is_dir() else None
        )
        assert not _dockerignore_excludes(source, patterns), source
        if sample is not None and "__pycache__" not in sample.parts:
            assert not _dockerignore_excludes(sample.relative_to(REPO).as_posix(), patterns), sample
    for secret in (".venv/bin/python", ".git/config", "pki/ca.key", "key.pem", "provider-pki/tls.key", "dist/x.tar.gz",
                   "generator/__pycache__/x.pyc", "tests/conftest.py", "provider/dev.key"):  # fmt: skip
        assert _dockerignore_excludes(secret, patterns), secret


@pytest.mark.kube
def test_deploy_passes_server_side_dry_run(kube_cluster: KubeCluster, tmp_path: Path) -> None:
    """`kubectl apply --dry-run=server` of deploy/ (the default and with every component) on the real
    kube-apiserver: every object is admitted by its validation. Two allowances for the 1.20 test server, both
    stated here: the namespace is created first (a dry run creates nothing, so the namespaced objects would not
    find it), and the PodDisruptionBudget is sent as policy/v1beta1 (policy/v1 is served from Kubernetes 1.21;
    its fields are the same). cert-manager's CRDs are not on the test server, so its component is rendered
    but not dry-run."""
    kube_cluster.create_namespace("trainer-policy-system")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "KUBECONFIG": str(kube_cluster.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
        "HOME": str(tmp_path),
    }
    for folder in (DEPLOY, _with_components(tmp_path / "plain", "without-mtls")):
        rendered = subprocess.run(
            [kubectl(), "kustomize", str(folder)], capture_output=True, text=True, check=True, env=env
        ).stdout
        documents = [d for d in yaml.safe_load_all(rendered) if d]
        for doc in documents:
            if doc["kind"] == "PodDisruptionBudget":
                assert doc["apiVersion"] == "policy/v1"
                doc["apiVersion"] = "policy/v1beta1"
        manifest = tmp_path / "deploy.yaml"
        manifest.write_text(yaml.safe_dump_all(documents))
        proc = subprocess.run(
            [kubectl(), "apply", "--dry-run=server", "-f", str(manifest)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.count("(server dry run)") == len(documents), proc.stdout
