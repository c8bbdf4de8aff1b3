"""Issue 29, item 2: bundle transfer and verification within limits.

- `bundle pull` trusts a declared layer size only up to a cap, stops reading when the registry sends more than it
  declared (memory bounded), and verifies before it writes anything;
- `bundle verify` refuses too many entries, too large entries and bombs, and hands the engine the data once;
- `bundle serve` serves only regular files of its folder that are bundles;
- `bundle build` writes all bundles or none (a real full disk).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import requests

from kubeflow_trainer_policy.bundle.archive import read_archive
from kubeflow_trainer_policy.engine.embedded import EmbeddedOpaEngine
from tests.bundle.helpers import cli
from tests.bundle.lying_registry import Lies, LyingRegistry
from tests.bundle.test_serve import start_server, stop
from tests.cli.helpers import run_cli
from tests.hostile import TRAINER_POLICY, assert_refused, on_full_disk, run_measured

NAME = "kubeflow-trainer-policy-v2.0.tar.gz"


def archive_bytes(files: dict[str, bytes]) -> bytes:
    """A bundle tarball of these files, written here with tarfile (not the code under test)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo("/" + name)
            info.size = len(files[name])
            tar.addfile(info, io.BytesIO(files[name]))
    return raw.getvalue()


def _bundle_with(built: Path, extra: dict[str, bytes]) -> bytes:
    files = read_archive(built)
    manifest = json.loads(files[".manifest"])
    manifest["roots"] = [*manifest["roots"], "extra"]
    files[".manifest"] = json.dumps(manifest).encode()
    return archive_bytes({**files, **extra})


# --- pull -----------------------------------------------------------------------------------------------------


def _pull(registry: LyingRegistry, out: Path, *extra: str) -> object:
    argv = [*TRAINER_POLICY, "bundle", "pull", f"{registry.host}/trainer/policy:v1", "-o", out, "--plain-http"]
    return run_measured([*argv, *extra], timeout=90)


def test_pull_stops_when_the_registry_sends_more_than_it_declared(tmp_path: Path, built_bundles) -> None:
    content = built_bundles["v2.0"].read_bytes()
    with LyingRegistry(Lies(content, endless=True)) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz")
        sent = registry.lies.sent[0]
    assert_refused(result, f"the registry sent more than {len(content)} bytes", max_rss_mib=300)
    assert sent < len(content) + 64 * 1024 * 1024, sent
    assert not list(tmp_path.iterdir())


def test_pull_refuses_a_declared_size_over_the_cap_before_downloading(tmp_path: Path, built_bundles) -> None:
    content = built_bundles["v2.0"].read_bytes()
    with LyingRegistry(Lies(content, declared_size=10 * 1024**3, endless=True)) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz")
        sent = registry.lies.sent[0]
    assert_refused(result, "declares 10737418240 bytes, over the limit of 67108864 (--max-layer-bytes")
    assert sent == 0
    with LyingRegistry(Lies(content)) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz", "--max-layer-bytes", "1000")
    assert_refused(result, f"declares {len(content)} bytes, over the limit of 1000")
    assert not list(tmp_path.iterdir())


def test_pull_refuses_less_than_declared(tmp_path: Path, built_bundles) -> None:
    content = built_bundles["v2.0"].read_bytes()
    with LyingRegistry(Lies(content, declared_size=len(content) + 10)) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz")
    assert_refused(result, f"is {len(content)} bytes, the manifest declares {len(content) + 10}")


def test_pull_verifies_before_writing_and_names_no_temporary_file(tmp_path: Path) -> None:
    with LyingRegistry(Lies(b"not a gzip at all")) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz")
    assert_refused(result, "not a gzipped tar bundle")
    assert ".partial" not in result.stderr and ".tmp" not in result.stderr
    assert not list(tmp_path.iterdir())


def test_pull_refuses_a_bomb_layer_in_bounded_memory(tmp_path: Path) -> None:
    bomb = _zeros_bundle(entries=40, entry_bytes=15 * 1024 * 1024)  # 600 MB inflated, well under 1 MB as sent
    with LyingRegistry(Lies(bomb)) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz")
    assert_refused(result, "entries larger than the limit of 134217728 bytes in all", max_rss_mib=400)
    assert not list(tmp_path.iterdir())


# --- verify ---------------------------------------------------------------------------------------------------


def _zeros_bundle(entries: int, entry_bytes: int) -> bytes:
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as inflated,
        tarfile.open(fileobj=inflated, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for i in range(entries):
            info = tarfile.TarInfo(f"/z{i}/data.json")
            info.size = entry_bytes
            tar.addfile(info, _Zeros(entry_bytes))
    return raw.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        n = self.left if size < 0 else min(size, self.left)
        self.left -= n
        return b"\0" * n


def test_verify_refuses_a_gzip_bomb(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tar.gz"
    path.write_bytes(_zeros_bundle(entries=40, entry_bytes=15 * 1024 * 1024))
    result = run_measured([*TRAINER_POLICY, "bundle", "verify", path], timeout=90)
    assert_refused(result, f"{path}: entries larger than the limit of 134217728 bytes in all (--max-total-bytes")


def test_verify_refuses_too_many_entries(tmp_path: Path, built_bundles) -> None:
    extra = {f"extra/e{i}/data.json": b'{"a": 1}' for i in range(20_000)}
    path = tmp_path / "many.tar.gz"
    path.write_bytes(_bundle_with(built_bundles["v2.0"], extra))
    result = run_measured([*TRAINER_POLICY, "bundle", "verify", path], timeout=90)
    assert_refused(result, f"{path}: more than the limit of 10000 entries (--max-entries or TRAINER_POLICY_BUNDLE")


def test_verify_refuses_a_pax_header_bomb(tmp_path: Path) -> None:
    """tarfile reads a PAX header whole, whatever size it declares: the inflated stream itself is bounded."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("/data.json")
        info.pax_headers = {"comment": "x" * (20 * 1024 * 1024)}
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    path = tmp_path / "pax.tar.gz"
    path.write_bytes(raw.getvalue())
    result = run_measured([*TRAINER_POLICY, "bundle", "verify", path, "--max-total-bytes", "1000000"], timeout=90)
    assert_refused(result, f"{path}: inflates to more than ", "over the limit of 1000000 bytes in all")


@pytest.mark.parametrize("flag", ["--max-entries", "--max-entry-bytes", "--max-total-bytes"])
def test_verify_limits_are_flags_and_environment(tmp_path: Path, built_bundles, flag: str) -> None:
    env = "TRAINER_POLICY_BUNDLE_" + flag.removeprefix("--").replace("-", "_").upper()  # the documented names
    by_flag = run_measured([*TRAINER_POLICY, "bundle", "verify", built_bundles["v2.0"], flag, "3"])
    by_env = run_measured([*TRAINER_POLICY, "bundle", "verify", built_bundles["v2.0"]], env={env: "3"})
    for result in (by_flag, by_env):
        assert_refused(result, str(built_bundles["v2.0"]), "limit of 3", f"({flag} or {env})")


def test_verify_without_opa_hands_the_embedded_engine_the_data_once(tmp_path: Path, built_bundles, monkeypatch) -> None:
    """Linear in entries where the embedded engine stands in for OPA (an installed package with no `opa`; faked
    here by making run_opa say so): every data file is merged first and added to the (real) engine in one call;
    adding them one by one made the engine merge its whole store again per file (10,000 entries took 7.3 s)."""
    from kubeflow_trainer_policy.bundle import activation
    from kubeflow_trainer_policy.opa.toolchain import OpaUnavailable

    def no_opa(*args, **kwargs):
        raise OpaUnavailable("no opa here (faked by the test)")

    calls: list[int] = []
    real_add_data = EmbeddedOpaEngine.add_data

    def counting(self, value, path=""):
        calls.append(1)
        return real_add_data(self, value, path)

    monkeypatch.setattr(activation, "run_opa", no_opa)
    monkeypatch.setattr(EmbeddedOpaEngine, "add_data", counting)
    extra = {f"extra/e{i}/data.json": json.dumps({"n": i}).encode() for i in range(2_000)}
    path = tmp_path / "data.tar.gz"
    path.write_bytes(_bundle_with(built_bundles["v2.0"], extra))
    result = run_cli("bundle", "verify", path)
    assert result.code == 0, result
    assert "activation checked on the embedded OPA only" in result.stderr
    assert len(calls) == 1, len(calls)


def test_verify_of_many_data_files_activates_in_the_real_opa(tmp_path: Path, built_bundles) -> None:
    extra = {f"extra/e{i}/data.json": json.dumps({"n": i}).encode() for i in range(2_000)}
    path = tmp_path / "data.tar.gz"
    path.write_bytes(_bundle_with(built_bundles["v2.0"], extra))
    result = run_cli("bundle", "verify", path)
    assert result.code == 0, result
    assert "embedded OPA only" not in result.stderr


def test_verify_reports_data_files_that_conflict(tmp_path: Path, built_bundles) -> None:
    extra = {"extra/data.json": b'{"a": {"b": 1}}', "extra/a/data.json": b'{"b": 2}'}
    path = tmp_path / "conflict.tar.gz"
    path.write_bytes(_bundle_with(built_bundles["v2.0"], extra))
    result = run_cli("bundle", "verify", path)
    assert result.code == 1, result
    assert "extra/a/b: data conflicts with other data at the same path" in result.stderr


def test_verify_refuses_an_alias_bomb_data_yaml(tmp_path: Path, built_bundles) -> None:
    from tests.hostile import alias_bomb

    path = tmp_path / "yaml.tar.gz"
    path.write_bytes(_bundle_with(built_bundles["v2.0"], {"extra/data.yaml": alias_bomb().encode()}))
    result = run_measured([*TRAINER_POLICY, "bundle", "verify", path], timeout=90)
    assert result.code == 1, result
    assert "extra/data.yaml: does not parse: YAML aliases expand to more than the limit" in result.stderr
    assert result.peak_rss_mib < 300


# --- serve ----------------------------------------------------------------------------------------------------


def test_serve_serves_only_bundles_that_are_regular_files_of_its_folder(tmp_path: Path, built_bundles) -> None:
    folder, outside = tmp_path / "dist", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    shutil.copy(built_bundles["v2.0"], folder / NAME)
    shutil.copy(built_bundles["v2.0"], outside / "elsewhere.tar.gz")
    (folder / "passwd.tar.gz").symlink_to("/etc/passwd")
    (folder / "linked.tar.gz").symlink_to(outside / "elsewhere.tar.gz")
    (folder / "junk.tar.gz").write_bytes(os.urandom(4096))
    (folder / "nomanifest.tar.gz").write_bytes(archive_bytes({"x.rego": b"package x\n"}))
    (folder / "dump.tar.gz").write_bytes(gzip.compress(b"not a tar"))
    os.mkfifo(folder / "fifo.tar.gz")
    process, url = start_server(folder)
    try:
        with requests.Session() as session:
            session.trust_env = False
            ok = session.get(url + NAME, timeout=10)
            assert (
                ok.status_code == 200
                and hashlib.sha256(ok.content).digest() == hashlib.sha256(built_bundles["v2.0"].read_bytes()).digest()
            )
            for name in ("passwd.tar.gz", "linked.tar.gz", "junk.tar.gz", "nomanifest.tar.gz", "dump.tar.gz"):
                response = session.get(url + name, timeout=10)
                assert response.status_code == 404, (name, response.status_code)
                assert b"root:" not in response.content
            assert session.get(url + "fifo.tar.gz", timeout=10).status_code == 404
    finally:
        stop(process)


def test_serve_lists_only_the_bundles(tmp_path: Path, built_bundles) -> None:
    folder = tmp_path / "dist"
    folder.mkdir()
    shutil.copy(built_bundles["v2.0"], folder / NAME)
    (folder / "passwd.tar.gz").symlink_to("/etc/passwd")
    process = subprocess.Popen(
        [*TRAINER_POLICY, "bundle", "serve", str(folder), "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert line.rstrip().endswith(f"({NAME})"), line


# --- build ----------------------------------------------------------------------------------------------------


def test_build_on_a_full_disk_leaves_the_old_bundles(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    proc = cli("bundle", "build", "--output-dir", str(dist), "--revision", "old")
    assert proc.returncode == 0, proc.stderr
    before = {p.name: p.read_bytes() for p in dist.iterdir()}
    old_kib = sum(len(b) for b in before.values()) // 1024
    size_kib = old_kib + old_kib // 2 + 16  # room for the old set, not for a new one next to it
    argv = [*TRAINER_POLICY, "bundle", "build", "--output-dir", dist, "--revision", "new"]
    result = on_full_disk(argv, dist, size_kib=size_kib)
    assert result.code == 2, result
    assert result.stdout == "", "no success line"
    assert "Traceback" not in result.stderr and len(result.stderr_lines) == 1, result.stderr
    assert "No space left on device" in result.stderr and str(dist) in result.stderr, result.stderr
    assert ".tmp" not in result.stderr
    assert {p.name: p.read_bytes() for p in dist.iterdir()} == before, "the old set, whole, and nothing else"


def test_build_on_a_full_disk_creates_no_folder(tmp_path: Path) -> None:
    parent = tmp_path / "out"
    parent.mkdir()
    argv = [*TRAINER_POLICY, "bundle", "build", "--output-dir", parent / "dist"]
    result = on_full_disk(argv, parent, size_kib=64)
    assert result.code == 2 and result.stdout == "", result
    assert "No space left on device" in result.stderr, result.stderr
    assert list(parent.iterdir()) == []


def test_pull_writes_a_verified_bundle(tmp_path: Path, built_bundles) -> None:
    content = built_bundles["v2.0"].read_bytes()
    with LyingRegistry(Lies(content)) as registry:
        result = _pull(registry, tmp_path / "out.tar.gz")
    assert result.code == 0, result
    assert (tmp_path / "out.tar.gz").read_bytes() == content
