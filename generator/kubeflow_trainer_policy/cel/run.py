"""Running tools/cel (`cel eval`, `cel check`) on documents built here: one process for a whole batch."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from kubeflow_trainer_policy.cel.toolchain import cel_binary


class CelError(Exception):
    """tools/cel could not run the batch (bad input, a crash): one line with its stderr."""


def run_cel(
    command: list[str], document: dict[str, Any], *, timeout: float = 600, library: str | None = None
) -> dict[str, Any]:
    """`cel COMMAND...` with the document on stdin, on the named CEL library's build (the newest by default); its
    JSON answer."""
    result = subprocess.run(
        [str(cel_binary(library)), *command],
        input=json.dumps(document),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()
        raise CelError(f"cel {command[0]} exited {result.returncode}: {' '.join(lines[:3])}")
    return json.loads(result.stdout)


def evaluate(
    policies: list[dict[str, Any]], cases: list[dict[str, Any]], session: CelSession | None = None
) -> list[dict[str, Any]]:
    """Every case judged by its policy (`cel eval`, or a running session's), in the order given."""
    document = {"policies": policies, "cases": cases}
    body = session.send(document) if session is not None else run_cel(["eval"], document)
    return body["results"]


class CelSession:
    """One `cel eval --stream` process for many batches: a document per line in, an answer per line out. Policies
    stay compiled in it between batches: a policy sent again unchanged is not sent (compiling is most of a small
    batch's time), one sent under its name with other content replaces it. `library` names the CEL library's build
    (toolchain.libraries(); the newest by default)."""

    def __init__(self, library: str | None = None) -> None:
        self.library = library
        self._process = subprocess.Popen(
            [str(cel_binary(library)), "eval", "--stream"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._compiled: dict[str, str] = {}
        """The JSON of the policy compiled under each name."""

    def _new_policies(self, policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        new = []
        for policy in policies:
            text = json.dumps(policy, sort_keys=True)
            if self._compiled.get(policy["name"]) != text:
                self._compiled[policy["name"]] = text
                new.append(policy)
        return new

    def send(self, document: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        document = {**document, "policies": self._new_policies(document.get("policies", []))}
        self._process.stdin.write(json.dumps(document) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            stderr = self._process.stderr.read() if self._process.stderr else ""
            raise CelError(f"cel eval --stream ended: {' '.join(stderr.strip().splitlines()[:3]) or 'no output'}")
        body = json.loads(line)
        if "error" in body:
            raise CelError(f"cel eval --stream: {body['error']}")
        return body

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> CelSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def check(
    policies: list[dict[str, Any]], compatibility_version: str, environment: str = "vap", library: str | None = None
) -> list[dict[str, Any]]:
    """The expressions that do not compile where an API server of compatibility_version validates new policies
    (environment "vap"), or, for templates, where Gatekeeper's K8sNativeValidation driver compiles them with the CEL
    libraries of k8s.io/apiserver 0.<minor of compatibility_version> (environment "gatekeeper")."""
    args = ["check", "--compatibility-version", compatibility_version, "--environment", environment]
    return run_cel(args, {"policies": policies}, library=library)["errors"]
