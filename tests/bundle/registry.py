"""A real OCI registry (Debian's docker-registry) on 127.0.0.1 for the bundle tests, optionally with
htpasswd auth and TLS; binaries from scripts/ensure-docker-registry.sh."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import requests

from kubeflow_trainer_policy.paths import PROJECT_ROOT
from tests.support import free_port


@cache
def binaries() -> dict[str, str]:
    proc = subprocess.run(
        ["bash", str(PROJECT_ROOT / "scripts" / "ensure-docker-registry.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ensure-docker-registry.sh failed: {proc.stderr.strip()}")
    return dict(line.split("=", 1) for line in proc.stdout.split())


@dataclass
class Registry:
    host: str
    process: subprocess.Popen
    log: Path
    tls: bool

    @classmethod
    def start(
        cls, workdir: Path, users: dict[str, str] | None = None, tls: tuple[Path, Path, Path] | None = None
    ) -> Registry:
        """`tls`: (certificate, key, CA that signed the certificate)."""
        workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        config = [
            "version: 0.1",
            "log: {level: warn}",
            f"storage: {{filesystem: {{rootdirectory: {workdir / 'storage'}}}, delete: {{enabled: true}}}}",
            "http:",
            f"  addr: 127.0.0.1:{port}",
        ]
        if tls:
            config.append(f"  tls: {{certificate: {tls[0]}, key: {tls[1]}}}")
        if users:
            htpasswd = workdir / "htpasswd"
            for i, (user, password) in enumerate(users.items()):
                flags = "-Bbc" if i == 0 else "-Bb"
                subprocess.run(
                    [binaries()["HTPASSWD"], flags, str(htpasswd), user, password],
                    check=True,
                    capture_output=True,
                    timeout=60,
                )
            config.append(f"auth: {{htpasswd: {{realm: trainer-policy-tests, path: {htpasswd}}}}}")
        (workdir / "config.yml").write_text("\n".join(config) + "\n")
        log = workdir / "registry.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [binaries()["DOCKER_REGISTRY"], "serve", str(workdir / "config.yml")],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )
        registry = cls(f"127.0.0.1:{port}", process, log, tls is not None)
        registry._wait_ready(tls[2] if tls else None)
        return registry

    def _wait_ready(self, ca: Path | None) -> None:
        scheme = "https" if self.tls else "http"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"docker-registry exited: {self.log.read_text()[-2000:]}")
            try:
                with requests.Session() as s:
                    s.trust_env = False
                    s.get(f"{scheme}://{self.host}/v2/", timeout=2, verify=str(ca) if ca else True)
                return
            except requests.RequestException:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"docker-registry did not answer within 30 s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
