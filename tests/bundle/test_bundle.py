"""OPA bundles: reproducible build, contents that evaluate, and OPA-format signatures checked independently."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kubeflow_trainer_policy.bundle.activation import activation_problems
from kubeflow_trainer_policy.bundle.archive import read_archive, write_archive
from kubeflow_trainer_policy.bundle.build import build_bundle
from kubeflow_trainer_policy.bundle.signing import (
    SignatureError,
    SigningKey,
    file_hash,
    signatures_document,
    signed_token,
    verify_files,
)
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from tests.bundle.helpers import runnable_kinds


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def pem_pair(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    key = rsa.generate_private_key(65537, 2048) if kind == "rsa" else ec.generate_private_key(ec.SECP256R1())
    private = tmp_path / f"{kind}.key"
    public = tmp_path / f"{kind}.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = cli("bundle", "build", "--profile", "v2.0", "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    return out / "kubeflow-trainer-policy-v2.0.tar.gz"


def test_build_is_reproducible_and_well_formed(built, tmp_path):
    again = cli("bundle", "build", "--profile", "v2.0", "--output-dir", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / built.name).read_bytes() == built.read_bytes()
    with tarfile.open(built) as tar:
        names = tar.getnames()
        assert all(n.startswith("/") for n in names)
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
    files = read_archive(built)
    manifest = json.loads(files[".manifest"])
    assert manifest["rego_version"] == 1
    assert "lib/trainer" in manifest["roots"] and "lib" not in manifest["roots"]
    assert manifest["metadata"]["profile"] == "v2.0"
    assert activation_problems(files) == []


def test_bundle_holds_every_runnable_template_module_verbatim_plus_the_entry_point(built):
    files = read_archive(built)
    templates = load_policy_set([gatekeeper_bundle_dir("v2.0")]).templates.values()
    # Templates whose Rego calls external_data (Gatekeeper's builtin) would stop OPA activating the bundle.
    runnable = [t for t in templates if t.kind in runnable_kinds("v2.0")]
    assert 0 < len(runnable) <= len(templates)
    sources = {m.source for t in runnable for m in t.modules}
    shipped = {n: c.decode() for n, c in files.items() if n.endswith(".rego")}
    assert set(shipped.values()) - sources == {shipped["kubeflow/trainer/decision.rego"]}
    assert sources <= set(shipped.values())
    version = json.loads(files[".manifest"])["metadata"]["version"]
    assert build_bundle(gatekeeper_bundle_dir("v2.0"), "v2.0", version).files == files


def test_bundle_modules_evaluate_a_review_like_gatekeeper_with_no_custom_builtin(built):
    files = read_archive(built)
    review = {
        "operation": "CREATE",
        "object": {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "j", "namespace": "a"},
            "spec": {"managedBy": "example.com/other"},
        },
    }
    with EmbeddedOpaEngine() as engine:
        for name, content in files.items():
            if name.endswith(".rego"):
                engine.add_module(name, content.decode())
        result = engine.eval_document("trainertrainjobmanagedby.violation", {"review": review, "parameters": {}})
    assert [v["details"]["detail"] for v in result.value] == [
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
    ]


def test_a_module_calling_external_data_stops_activation(built):
    files = read_archive(built)
    files["lib/trainer/extra.rego"] = (
        b'package lib.trainer.extra\n\nx := external_data({"provider": "p", "keys": []})\n'
    )
    [problem] = activation_problems(files)
    assert "OPA refuses to activate it" in problem and "undefined function external_data" in problem


def test_the_real_opa_refuses_what_gatekeeper_3_20_refused(built):
    """An old lib podsets (a comprehension head using an argument no body expression uses): the type checker of
    the build's own OPA, Gatekeeper 3.20's 1.7.1, refuses it, so the bundle does not activate."""
    files = read_archive(built)
    files["lib/trainer/podsets.rego"] = files["lib/trainer/podsets.rego"].replace(
        b"{[k, name] | some name, value in values; not nanos.parse(value); k := kind}",
        b"{[kind, name] | some name, value in values; not nanos.parse(value)}",
    )
    [problem] = activation_problems(files)
    assert "podsets.rego" in problem and "rego_type_error: match error" in problem


def test_structured_files_hash_like_opa():
    # OPA walks parsed JSON: keys sorted, no whitespace; policies hash as raw bytes.
    assert (
        file_hash(".manifest", b'{ "b": 1,\n "a": [true, "x/y"] }')
        == hashlib.sha256(b'{"a":[true,"x/y"],"b":1}').hexdigest()
    )
    assert file_hash("p.rego", b"package p\n") == hashlib.sha256(b"package p\n").hexdigest()


@pytest.mark.parametrize(("kind", "alg"), [("rsa", "RS256"), ("ec", "ES256")])
def test_sign_and_verify_round_trip_checked_by_pyjwt(built, tmp_path, kind, alg):
    private, public = pem_pair(tmp_path, kind)
    signed = tmp_path / "signed.tar.gz"
    proc = cli(
        "bundle",
        "sign",
        str(built),
        "--signing-key",
        str(private),
        "--signing-alg",
        alg,
        "--key-id",
        "trainer",
        "-o",
        str(signed),
    )
    assert proc.returncode == 0, proc.stderr
    files = read_archive(signed)
    [token] = json.loads(files[".signatures.json"])["signatures"]
    assert jwt.get_unverified_header(token)["kid"] == "trainer"
    payload = jwt.decode(token, public.read_text(), algorithms=[alg])
    listed = {f["name"]: f for f in payload["files"]}
    assert set(listed) == set(files) - {".signatures.json"}
    assert all(f["algorithm"] == "SHA-256" for f in listed.values())
    rego = next(n for n in listed if n.endswith(".rego"))
    assert listed[rego]["hash"] == hashlib.sha256(files[rego]).hexdigest()
    proc = cli("bundle", "verify", str(signed), "--verification-key", str(public), "--key-id", "trainer")
    assert proc.returncode == 0, proc.stdout
    assert "signature verified" in proc.stdout


def signed_files(built: Path, tmp_path: Path) -> tuple[dict[str, bytes], bytes]:
    private, public = pem_pair(tmp_path, "rsa")
    files = read_archive(built)
    key = SigningKey.from_pem(private.read_bytes(), "RS256")
    files[".signatures.json"] = signatures_document(signed_token(files, key, "default"))
    return files, public.read_bytes()


def test_tampered_file_fails_with_digest_mismatch(built, tmp_path):
    files, public = signed_files(built, tmp_path)
    rego = next(n for n in files if n.endswith(".rego"))
    files[rego] += b"\n# changed\n"
    with pytest.raises(SignatureError, match=f"{rego}: digest mismatch"):
        verify_files(files, public)
    write_archive(tmp_path / "t.tar.gz", files)
    (tmp_path / "pub.pem").write_bytes(public)
    proc = cli("bundle", "verify", str(tmp_path / "t.tar.gz"), "--verification-key", str(tmp_path / "pub.pem"))
    assert proc.returncode == 1 and "digest mismatch" in proc.stderr and "digest mismatch" not in proc.stdout


def test_unsigned_extra_or_missing_files_and_wrong_keys_fail(built, tmp_path):
    files, public = signed_files(built, tmp_path)
    with pytest.raises(SignatureError, match=r"file extra\.rego not included in bundle signature"):
        verify_files({**files, "extra.rego": b"package extra\n"}, public)
    dropped = dict(files)
    dropped.pop(next(n for n in files if n.endswith(".rego")))
    with pytest.raises(SignatureError, match="listed in the signature are missing"):
        verify_files(dropped, public)
    (tmp_path / "other").mkdir()
    _, other_public = pem_pair(tmp_path / "other", "ec")
    with pytest.raises(SignatureError, match=r"the key does not fit RS256"):
        verify_files(files, other_public.read_bytes())
    other_rsa = (
        rsa.generate_private_key(65537, 2048)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(SignatureError, match="does not verify"):
        verify_files(files, other_rsa)
    with pytest.raises(SignatureError, match="scope mismatch"):
        verify_files(files, public, scope="write")
    with pytest.raises(SignatureError, match="expected 'other'"):
        verify_files(files, public, key_id="other")
    unsigned = dict(files)
    unsigned.pop(".signatures.json")
    with pytest.raises(SignatureError, match="not signed"):
        verify_files(unsigned, public)


def test_bad_inputs_exit_2_with_one_line(built, tmp_path):
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tarball")
    proc = cli("bundle", "verify", str(tmp_path / "junk.tar.gz"))
    assert proc.returncode == 2 and "junk.tar.gz: not a gzipped tar bundle" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    private, _ = pem_pair(tmp_path, "ec")
    proc = cli(
        "bundle",
        "sign",
        str(built),
        "--signing-key",
        str(private),
        "--signing-alg",
        "RS256",
        "-o",
        str(tmp_path / "x.tar.gz"),
    )
    assert proc.returncode == 2 and "ec.key: the key does not fit RS256" in proc.stderr
    assert not (tmp_path / "x.tar.gz").exists(), "nothing half-written"
    proc = cli("bundle", "sign", str(built), "--signing-key", str(tmp_path / "missing.pem"))
    assert proc.returncode == 2 and "missing.pem: No such file or directory" in proc.stderr
