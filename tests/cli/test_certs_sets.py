"""Issue 29, item 3: `certs` never destroys a CA. A folder that holds one is refused unless its CA is reused
(`--ca-cert/--ca-key`) or rotated on purpose (`--rotate-ca`), and the files are swapped as one set: the real
command is killed (SIGKILL, from inside the process, just before its n-th rename, link or symlink) at every
such point of a rotation, and after each kill the folder shows the old set or the new one, whole."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.cli.helpers import assert_error, run_cli
from tests.hostile import PROJECT_ROOT, on_full_disk

SET = ("ca.crt", "ca.key", "tls.crt", "tls.key", "client-gatekeeper.crt", "client-gatekeeper.key", "ca-bundle.txt")


def _certs(out: Path, *extra: str | Path) -> None:
    result = run_cli("certs", "--out-dir", out, "--client", "gatekeeper", "--san", "127.0.0.1", *extra)
    assert result.code == 0, result


def _digests(out: Path) -> dict[str, str]:
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in SET if (out / name).exists()}


def _consistent(out: Path) -> None:
    """Every certificate is signed by ca.crt, every key belongs to its certificate, ca.key to ca.crt."""
    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    pairs = [("ca.crt", "ca.key"), ("tls.crt", "tls.key"), ("client-gatekeeper.crt", "client-gatekeeper.key")]
    for cert_name, key_name in pairs:
        cert = x509.load_pem_x509_certificate((out / cert_name).read_bytes())
        key = serialization.load_pem_private_key((out / key_name).read_bytes(), password=None)
        assert key.public_key().public_numbers() == cert.public_key().public_numbers(), (cert_name, key_name)  # type: ignore[union-attr]
        cert.verify_directly_issued_by(ca)
    bundle = (out / "ca-bundle.txt").read_text().strip()
    assert bundle == __import__("base64").b64encode((out / "ca.crt").read_bytes()).decode()


def test_a_folder_with_a_ca_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "pki"
    _certs(out)
    before = _digests(out)
    result = run_cli("certs", "--out-dir", out)
    assert_error(result, f"{out}: --out-dir: already holds a CA (ca.crt, ca.key)", "--rotate-ca")
    assert _digests(out) == before


def test_a_folder_with_only_a_ca_key_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "pki"
    out.mkdir()
    (out / "ca.key").write_text("my only copy")
    assert_error(run_cli("certs", "--out-dir", out), "already holds a CA (ca.key)")
    assert (out / "ca.key").read_text() == "my only copy"


def test_another_ca_is_refused_without_rotate(tmp_path: Path) -> None:
    out, other = tmp_path / "pki", tmp_path / "other"
    _certs(out)
    _certs(other)
    before = _digests(out)
    result = run_cli("certs", "--out-dir", out, "--ca-cert", other / "ca.crt", "--ca-key", other / "ca.key")
    assert_error(result, "already holds a CA", "with another CA")
    assert _digests(out) == before


def test_reusing_the_folders_ca_keeps_it_and_its_certificates(tmp_path: Path) -> None:
    out = tmp_path / "pki"
    _certs(out)
    before = _digests(out)
    _certs(out, "--ca-cert", out / "ca.crt", "--ca-key", out / "ca.key")
    after = _digests(out)
    assert after["ca.crt"] == before["ca.crt"] and after["ca.key"] == before["ca.key"]
    assert after["tls.crt"] != before["tls.crt"]
    _consistent(out)


def test_rotate_replaces_the_whole_set(tmp_path: Path) -> None:
    out = tmp_path / "pki"
    _certs(out)
    (out / "notes.txt").write_text("mine")
    before = _digests(out)
    _certs(out, "--rotate-ca")
    after = _digests(out)
    assert all(after[name] != before[name] for name in SET)
    _consistent(out)
    assert (out / "notes.txt").read_text() == "mine"  # files outside the set are left alone


def test_a_folder_written_before_sets_is_taken_over(tmp_path: Path) -> None:
    """Regular files from an earlier version become links to the set, and a rotation still swaps all at once."""
    out = tmp_path / "pki"
    _certs(out)
    for name in SET:  # as the earlier version left them: plain files
        data = (out / name).read_bytes()
        (out / name).unlink()
        (out / name).write_bytes(data)
    _certs(out, "--ca-cert", out / "ca.crt", "--ca-key", out / "ca.key")
    assert all((out / name).is_symlink() for name in SET)
    _consistent(out)


KILLER = """
import os, signal, sys
target = int(sys.argv[1])
seen = 0
def hook(event, args):
    global seen
    if event in ("os.rename", "os.link", "os.symlink"):
        seen += 1
        if seen == target:
            os.kill(os.getpid(), signal.SIGKILL)
sys.addaudithook(hook)
from kubeflow_trainer_policy.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _killed_at(n: int, *argv: str | Path) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(n), *map(str, argv)], capture_output=True, cwd=PROJECT_ROOT, timeout=120
    )
    return proc.returncode


@pytest.mark.parametrize("rotation", ["new CA", "reused CA"])
def test_a_kill_at_any_point_leaves_the_old_set_or_the_new_one(tmp_path: Path, rotation: str) -> None:
    out = tmp_path / "pki"
    _certs(out)
    old = _digests(out)
    extra = ["--rotate-ca"] if rotation == "new CA" else ["--ca-cert", out / "ca.crt", "--ca-key", out / "ca.key"]
    argv = ["certs", "--out-dir", out, "--client", "gatekeeper", "--san", "127.0.0.1", *extra]
    kills = 0
    for n in range(1, 60):
        code = _killed_at(n, *argv)
        if code == 0:
            break
        assert code == -9, code
        kills += 1
        _consistent(out)  # whole, whichever set it is
        now = _digests(out)
        assert now == old or all(now[name] != old[name] for name in ("tls.crt", "tls.key")), (n, now, old)
        old = now
    else:
        raise AssertionError("the command never completed")
    assert kills >= 1, "no kill point was reached"
    _consistent(out)


def test_a_full_disk_leaves_the_old_set(tmp_path: Path) -> None:
    out = tmp_path / "pki"
    _certs(out)
    before = _digests(out)
    clients = [arg for i in range(100) for arg in ("--client", f"c{i}")]
    cli = [sys.executable, "-m", "kubeflow_trainer_policy.cli.main"]
    result = on_full_disk([*cli, "certs", "--out-dir", out, "--rotate-ca", *clients], out, size_kib=256)
    assert result.code == 2, result
    assert "Traceback" not in result.stderr and len(result.stderr_lines) == 1, result.stderr
    assert "No space left on device" in result.stderr and str(out) in result.stderr, result.stderr
    assert _digests(out) == before
    _consistent(out)


@pytest.mark.parametrize("out_dir", ["pki", "new/nested/pki"], ids=["new-folder", "new-nested-folders"])
def test_a_full_disk_leaves_no_new_folder(tmp_path: Path, out_dir: str) -> None:
    """Issue 40, item 5: `certs` on a full disk left the --out-dir it had created behind, empty. A real small tmpfs
    (256 KiB) is mounted over an empty folder and the certificates asked for do not fit: nothing may be left."""
    base = tmp_path / "disk"
    clients = [arg for i in range(100) for arg in ("--client", f"c{i}")]
    cli = [sys.executable, "-m", "kubeflow_trainer_policy.cli.main"]
    provider = ["--provider-yaml", base / "provider.yaml"]
    result = on_full_disk([*cli, "certs", "--out-dir", base / out_dir, *provider, *clients], base, size_kib=256)
    assert result.code == 2, result
    assert "Traceback" not in result.stderr and len(result.stderr_lines) == 1, result.stderr
    assert "No space left on device" in result.stderr, result.stderr
    assert sorted(p.name for p in base.iterdir()) == []
