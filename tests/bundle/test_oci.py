"""`bundle push|pull` against a real OCI registry (Debian's docker-registry) on 127.0.0.1: the layout OPA's
OCI downloader reads, signatures kept, decisions unchanged, auth (htpasswd) and TLS."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import oras.provider
import pytest
import requests

from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.bundle.archive import read_archive, write_archive
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy_provider.certs import issue, make_ca
from tests.bundle.helpers import (
    OpaBundle,
    cli,
    restricted_policy_set,
    runnable_kinds,
    runner_decision,
    suite_cases,
)
from tests.bundle.registry import Registry, free_port
from tests.bundle.test_bundle import pem_pair

LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[Registry]:
    started = Registry.start(tmp_path_factory.mktemp("registry"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def signed(tmp_path_factory, built_bundles) -> tuple[Path, Path]:
    """(signed v2.0 bundle, public key)."""
    folder = tmp_path_factory.mktemp("signed")
    private, public = pem_pair(folder, "rsa")
    bundle = folder / "kubeflow-trainer-policy-v2.0.tar.gz"
    proc = cli("bundle", "sign", str(built_bundles["v2.0"]), "--signing-key", str(private), "-o", str(bundle))
    assert proc.returncode == 0, proc.stderr
    return bundle, public


def raw_get(url: str, accept: str = MANIFEST, **kwargs) -> requests.Response:
    with requests.Session() as session:
        session.trust_env = False
        return session.get(url, headers={"Accept": accept}, timeout=30, **kwargs)


def test_pushed_artifact_has_the_layout_opa_reads(registry, signed):
    bundle, _ = signed
    ref = f"{registry.host}/trainer/policy:layout"
    proc = cli("bundle", "push", str(bundle), ref, "--plain-http")
    assert proc.returncode == 0, proc.stderr
    response = raw_get(f"http://{registry.host}/v2/trainer/policy/manifests/layout")
    assert response.status_code == 200
    manifest = response.json()
    assert manifest["mediaType"] == MANIFEST and manifest["schemaVersion"] == 2
    assert manifest["config"]["mediaType"] == CONFIG
    [layer] = manifest["layers"]
    content = bundle.read_bytes()
    assert layer == {**layer, "mediaType": LAYER, "size": len(content)}
    assert layer["digest"] == "sha256:" + hashlib.sha256(content).hexdigest()
    for blob in (manifest["config"], layer):  # OPA copies the whole graph into its local store
        fetched = raw_get(f"http://{registry.host}/v2/trainer/policy/blobs/{blob['digest']}", accept="*/*")
        assert fetched.status_code == 200
        assert "sha256:" + hashlib.sha256(fetched.content).hexdigest() == blob["digest"]
    assert response.headers["Docker-Content-Digest"] in proc.stdout


def test_pulled_bundle_verifies_and_decides_like_the_source_policies(registry, signed, tmp_path):
    bundle, public = signed
    ref = f"{registry.host}/trainer/policy:v2.0"
    assert cli("bundle", "push", str(bundle), ref, "--plain-http").returncode == 0
    pulled = tmp_path / "pulled.tar.gz"
    proc = cli("bundle", "pull", ref, "--plain-http", "-o", str(pulled), "--verification-key", str(public))
    assert proc.returncode == 0, proc.stderr
    assert "signature verified" in proc.stdout
    assert pulled.read_bytes() == bundle.read_bytes()
    verify = cli("bundle", "verify", str(pulled), "--verification-key", str(public))
    assert verify.returncode == 0, verify.stdout
    kinds = runnable_kinds("v2.0")
    cases = suite_cases("v2.0", kinds)
    assert len(cases) > 20
    # One activation of the pulled bundle decides every case, each with its own data.inventory.
    with GatekeeperRunner(restricted_policy_set("v2.0", kinds)) as runner, OpaBundle(pulled.read_bytes()) as opa:
        for case in cases:
            want = runner_decision(runner, case.request, case.objects)
            review = {"review": case.request.as_input()}
            got = opa.query_with_inventory("kubeflow.trainer.decision", review, inventory_document(case.objects))
            assert got == want, case.id


def test_a_digest_pins_a_revision(registry, signed, tmp_path, built_bundles):
    bundle, _ = signed
    ref = f"{registry.host}/trainer/pinned:v2.0"
    first = cli("bundle", "push", str(bundle), ref, "--plain-http")
    assert first.returncode == 0, first.stderr
    digest = first.stdout.split("manifest ", 1)[1].split(",", 1)[0]
    rebuilt = tmp_path / "rebuilt.tar.gz"
    assert (
        cli("bundle", "build", "--profile", "v2.0", "--output-dir", str(tmp_path), "--revision", "r2").returncode == 0
    )
    (tmp_path / "kubeflow-trainer-policy-v2.0.tar.gz").rename(rebuilt)
    assert cli("bundle", "push", str(rebuilt), ref, "--plain-http").returncode == 0
    by_tag, by_digest = tmp_path / "tag.tar.gz", tmp_path / "digest.tar.gz"
    assert cli("bundle", "pull", ref, "--plain-http", "-o", str(by_tag)).returncode == 0
    pinned = cli("bundle", "pull", f"{registry.host}/trainer/pinned@{digest}", "--plain-http", "-o", str(by_digest))
    assert pinned.returncode == 0, pinned.stderr
    assert by_tag.read_bytes() == rebuilt.read_bytes()
    assert by_digest.read_bytes() == bundle.read_bytes()
    # Pushing the same bundle again yields the same manifest digest: the artifact is reproducible.
    again = cli("bundle", "push", str(bundle), f"{registry.host}/trainer/pinned:again", "--plain-http")
    assert digest in again.stdout


def test_tampered_bundle_is_refused_on_pull_and_nothing_is_written(registry, signed, tmp_path):
    bundle, public = signed
    files = read_archive(bundle)
    rego = next(n for n in files if n.endswith(".rego"))
    files[rego] += b"\n# changed after signing\n"
    tampered = tmp_path / "tampered.tar.gz"
    write_archive(tampered, files)
    ref = f"{registry.host}/trainer/tampered:v1"
    assert cli("bundle", "push", str(tampered), ref, "--plain-http").returncode == 0
    out = tmp_path / "out.tar.gz"
    proc = cli("bundle", "pull", ref, "--plain-http", "-o", str(out), "--verification-key", str(public))
    assert proc.returncode == 2
    assert f"{rego}: digest mismatch" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob("out.tar.gz*"))


def test_an_artifact_without_a_bundle_layer_is_refused(registry, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("not a bundle\n")
    client = oras.provider.Registry(hostname=registry.host, insecure=True)
    client.push(
        target=f"{registry.host}/other/artifact:v1",
        files=[f"{note}:text/plain"],
        disable_path_validation=True,
        quiet=True,
    )
    proc = cli("bundle", "pull", f"{registry.host}/other/artifact:v1", "--plain-http", "-o", str(tmp_path / "b.tgz"))
    assert proc.returncode == 2
    assert f"no layer of media type {LAYER}: this artifact is not an OPA bundle" in proc.stderr
    assert not (tmp_path / "b.tgz").exists()


def test_unknown_tag_and_unreachable_registry_exit_2_with_one_line(registry, tmp_path):
    proc = cli("bundle", "pull", f"{registry.host}/trainer/policy:nope", "--plain-http", "-o", str(tmp_path / "x"))
    assert proc.returncode == 2 and "HTTP 404" in proc.stderr and "manifest unknown" in proc.stderr
    closed = f"127.0.0.1:{free_port()}"
    proc = cli("bundle", "pull", f"{closed}/trainer/policy:v1", "--plain-http", "-o", str(tmp_path / "x"), timeout=60)
    assert proc.returncode == 2 and "cannot reach the registry" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_htpasswd_auth(tmp_path, built_bundles):
    registry = Registry.start(tmp_path / "auth-registry", users={"alice": "s3cret pass"})
    try:
        bundle = built_bundles["v2.0"]
        ref = f"{registry.host}/trainer/policy:auth"
        anonymous = cli("bundle", "push", str(bundle), ref, "--plain-http")
        assert anonymous.returncode == 2 and "requires a login (HTTP Basic)" in anonymous.stderr
        (tmp_path / "wrong").write_text("wrong\n")
        wrong = cli(
            "bundle",
            "push",
            str(bundle),
            ref,
            "--plain-http",
            "--username",
            "alice",
            "--password-file",
            str(tmp_path / "wrong"),
        )
        assert wrong.returncode == 2 and "refused the login of 'alice' (HTTP 401)" in wrong.stderr, wrong.stderr
        (tmp_path / "password").write_text("s3cret pass\n")
        pushed = cli(
            "bundle",
            "push",
            str(bundle),
            ref,
            "--plain-http",
            "--username",
            "alice",
            "--password-file",
            str(tmp_path / "password"),
        )
        assert pushed.returncode == 0, pushed.stderr
        env = {**os.environ, "TRAINER_POLICY_REGISTRY_PASSWORD": "s3cret pass"}
        out = tmp_path / "pulled.tar.gz"
        pulled = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubeflow_trainer_policy.cli.main",
                "bundle",
                "pull",
                ref,
                "--plain-http",
                "--username",
                "alice",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert pulled.returncode == 0, pulled.stderr
        assert out.read_bytes() == bundle.read_bytes()
    finally:
        registry.stop()


def test_tls_registry(tmp_path, built_bundles):
    ca = make_ca("registry-test-ca")
    issue(ca, "127.0.0.1", ["127.0.0.1"]).write(tmp_path / "tls.crt", tmp_path / "tls.key")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    registry = Registry.start(
        tmp_path / "tls-registry", tls=(tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt")
    )
    try:
        bundle = built_bundles["v2.0"]
        ref = f"{registry.host}/trainer/policy:tls"
        untrusted = cli("bundle", "push", str(bundle), ref)
        assert untrusted.returncode == 2 and "TLS failed" in untrusted.stderr and "--ca-file" in untrusted.stderr
        pushed = cli("bundle", "push", str(bundle), ref, "--ca-file", str(tmp_path / "ca.crt"))
        assert pushed.returncode == 0, pushed.stderr
        out = tmp_path / "pulled.tar.gz"
        pulled = cli("bundle", "pull", ref, "--ca-file", str(tmp_path / "ca.crt"), "-o", str(out))
        assert pulled.returncode == 0, pulled.stderr
        assert out.read_bytes() == bundle.read_bytes()
        manifest = raw_get(f"https://{registry.host}/v2/trainer/policy/manifests/tls", verify=str(tmp_path / "ca.crt"))
        assert json.loads(manifest.content)["layers"][0]["mediaType"] == LAYER
    finally:
        registry.stop()
