"""Running the real opa (the oldest pinned one, or $TRAINER_POLICY_OPA) with the `opa` CLI's own flags."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from kubeflow_trainer_policy.opa.toolchain import opa_binary


def run_opa(
    args: Sequence[str | Path],
    *,
    check: bool = True,
    cwd: Path | None = None,
    timeout: float = 600,
    binary: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`opa ARGS...` (the build's OPA, or `binary`); with check, a non-zero exit raises OpaError with its stderr."""
    result = subprocess.run(
        [str(binary or opa_binary()), *map(str, args)],
        stdin=subprocess.DEVNULL,  # `opa run` without --server reads its REPL from stdin: end it at once
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise OpaError(args, result)
    return result


class OpaError(Exception):
    def __init__(self, args: Sequence[str | Path], result: subprocess.CompletedProcess[str]):
        self.result = result
        output = (result.stderr.strip() or result.stdout.strip()).splitlines()
        super().__init__(f"opa {' '.join(map(str, args[:1]))} exited {result.returncode}: {' '.join(output[:3])}")
