"""A real OPA consumes the bundles: `opa run --server` (the build's real opa, the oldest supported
Gatekeeper's) downloads each signed bundle from `trainer-policy bundle serve` and from a
real OCI registry, verifies its signature, activates it, and answers `data.kubeflow.trainer.decision` over OPA's
REST API exactly as the Gatekeeper runner (`trainer-policy review`) decides every suite case."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.bundle.archive import read_archive, write_archive
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.opa.toolchain import opa_binary
from tests.bundle.helpers import (
    PROFILES,
    cli,
    restricted_policy_set,
    runnable_kinds,
    runner_decision,
    suite_cases,
)
from tests.bundle.registry import Registry
from tests.bundle.test_bundle import pem_pair
from tests.support import free_port

KEY_ID = "trainer"


@dataclass
class Opa:
    """`opa run --server` on 127.0.0.1, spoken to over its REST API as a user would."""

    url: str
    process: subprocess.Popen
    log: Path

    @classmethod
    def start(cls, workdir: Path, config: dict[str, Any]) -> Opa:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "config.json").write_text(json.dumps(config))
        port = free_port()
        log = workdir / "opa.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    str(opa_binary()),
                    "run",
                    "--server",
                    "--addr",
                    f"127.0.0.1:{port}",
                    "-c",
                    str(workdir / "config.json"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        return cls(f"http://127.0.0.1:{port}", process, log)

    def session(self) -> requests.Session:
        session = requests.Session()
        session.trust_env = False
        return session

    def wait_bundles_activated(self, timeout: float = 60) -> None:
        """OPA's /health?bundles answers 200 once every configured bundle is activated."""
        deadline = time.monotonic() + timeout
        with self.session() as session:
            while time.monotonic() < deadline:
                assert self.process.poll() is None, self.log.read_text()
                try:
                    if session.get(f"{self.url}/health?bundles", timeout=5).status_code == 200:
                        return
                except requests.ConnectionError:
                    pass
                time.sleep(0.1)
        raise AssertionError(f"OPA did not activate its bundles in {timeout} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def signed_dist(tmp_path_factory, built_bundles) -> tuple[Path, Path]:
    """(folder of every profile's bundle signed with kid `trainer`, the public key)."""
    folder = tmp_path_factory.mktemp("signed-dist")
    private, public = pem_pair(tmp_path_factory.mktemp("keys"), "rsa")
    for path in built_bundles.values():
        proc = cli(
            "bundle",
            "sign",
            str(path),
            "--signing-key",
            str(private),
            "--key-id",
            KEY_ID,
            "-o",
            str(folder / path.name),
        )
        assert proc.returncode == 0, proc.stderr
    return folder, public


@pytest.fixture(scope="module")
def bundle_server(signed_dist) -> Iterator[str]:
    """`trainer-policy bundle serve` of the signed bundles; its URL."""
    folder, _ = signed_dist
    process = subprocess.Popen(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", "bundle", "serve", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("serving "), process.stderr.read()  # type: ignore[union-attr]
    yield line.split(" at ")[1].split()[0].rstrip("/")
    process.terminate()
    process.wait(timeout=15)


@pytest.fixture(scope="module")
def registry(tmp_path_factory, signed_dist) -> Iterator[Registry]:
    """A real registry holding every signed bundle at <host>/policies/trainer:<profile>, pushed by the CLI."""
    folder, _ = signed_dist
    started = Registry.start(tmp_path_factory.mktemp("registry"))
    for profile in PROFILES:
        bundle = folder / f"kubeflow-trainer-policy-{profile}.tar.gz"
        proc = cli("bundle", "push", str(bundle), f"{started.host}/policies/trainer:{profile}", "--plain-http")
        assert proc.returncode == 0, proc.stderr
    yield started
    started.stop()


def _config(service: dict[str, Any], resource: str, public: Path) -> dict[str, Any]:
    """OPA's configuration as the README shows it: one service, one signed bundle, its verification key."""
    return {
        "services": {"trainer-bundles": service},
        "bundles": {
            "trainer": {
                "service": "trainer-bundles",
                "resource": resource,
                "polling": {"min_delay_seconds": 60, "max_delay_seconds": 120},
                "signing": {"keyid": KEY_ID},
            }
        },
        "keys": {KEY_ID: {"algorithm": "RS256", "key": public.read_text()}},
    }


def _sources(profile: str, bundle_server: str, registry: Registry, public: Path) -> dict[str, dict[str, Any]]:
    return {
        "bundle serve": _config({"url": bundle_server}, f"kubeflow-trainer-policy-{profile}.tar.gz", public),
        "oci registry": _config(
            {"url": f"http://{registry.host}", "type": "oci"}, f"{registry.host}/policies/trainer:{profile}", public
        ),
    }


@pytest.mark.parametrize("profile", PROFILES)
def test_a_real_opa_downloads_verifies_activates_and_decides_every_suite_case(
    tmp_path, signed_dist, bundle_server, registry, profile
):
    _, public = signed_dist
    cases = suite_cases(profile, runnable_kinds(profile))
    assert len(cases) > 20
    runner = GatekeeperRunner(restricted_policy_set(profile, runnable_kinds(profile)))
    try:
        wanted = [runner_decision(runner, case.request, case.objects) for case in cases]
    finally:
        runner.close()
    assert {w["allowed"] for w in wanted} == {True, False}
    for source, config in _sources(profile, bundle_server, registry, public).items():
        opa = Opa.start(tmp_path / source.replace(" ", "-"), config)
        try:
            opa.wait_bundles_activated()
            with opa.session() as session:
                revision = session.get(f"{opa.url}/v1/data/system/bundles/trainer/manifest/revision", timeout=10)
                assert profile in revision.json()["result"], source
                for case, want in zip(cases, wanted, strict=True):
                    put = session.put(f"{opa.url}/v1/data/inventory", json=inventory_document(case.objects), timeout=10)
                    assert put.status_code == 204, put.text
                    answer = session.post(
                        f"{opa.url}/v1/data/kubeflow/trainer/decision",
                        json={"input": {"review": case.request.as_input()}},
                        timeout=10,
                    )
                    assert answer.status_code == 200, answer.text
                    assert answer.json()["result"] == want, f"{source}: {case.id}"
        finally:
            opa.stop()


def test_a_real_opa_refuses_a_bundle_whose_signature_does_not_verify(tmp_path, signed_dist, bundle_server):
    """A file changed after signing: OPA's bundle plugin refuses it and /health?bundles never turns 200; the CLI's
    `bundle verify`, which drives the same OPA, refuses it too."""
    folder, public = signed_dist
    files = read_archive(folder / "kubeflow-trainer-policy-v2.0.tar.gz")
    data = json.loads(files["kubeflow/trainer/data.json"])
    files["kubeflow/trainer/data.json"] = json.dumps({**data, "constraints": data["constraints"][1:]}).encode()
    tampered = folder / "kubeflow-trainer-policy-tampered.tar.gz"
    write_archive(tampered, files)
    opa = Opa.start(tmp_path / "opa", _config({"url": bundle_server}, tampered.name, public))
    try:
        with pytest.raises(AssertionError, match="did not activate"):
            opa.wait_bundles_activated(timeout=5)
        log = opa.log.read_text()
        assert "Bundle load failed" in log and "data.json" in log, log
    finally:
        opa.stop()
    proc = cli("bundle", "verify", str(tampered), "--verification-key", str(public))
    assert proc.returncode == 1
    assert "OPA refuses to activate it" in proc.stderr and "data.json" in proc.stderr
