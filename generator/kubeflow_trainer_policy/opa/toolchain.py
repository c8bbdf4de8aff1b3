"""The real OPA on this machine: the OPA of the oldest supported Gatekeeper (tools/versions.json), `go install`ed
from the Go module proxy into the project's cache by `make tools` (kubeflow_trainer_policy.pinned), or the `opa` a
user names with $TRAINER_POLICY_OPA. `make build` also runs every other pinned OPA (opa.checks).
`python -m kubeflow_trainer_policy.opa.toolchain` installs it if needed and prints `OPA=<path>`.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path

from kubeflow_trainer_policy.gotools.builder import ToolchainError
from kubeflow_trainer_policy.pinned import ENV as PINNED_ENV
from kubeflow_trainer_policy.pinned.install import InstallError, install
from kubeflow_trainer_policy.pinned.versions import VERSIONS_FILE, VersionsError, pins

ENV = PINNED_ENV["opa"]
HOW_TO_OVERRIDE = f"set {ENV}=/path/to/opa (or {ENV}=opa for the one on PATH) to use an opa of your own"

__all__ = ["ENV", "OpaUnavailable", "ToolchainError", "opa_binary"]


class OpaUnavailable(ToolchainError):
    """No opa at all: an installed package (no tools/versions.json), no $TRAINER_POLICY_OPA, no `opa` on PATH."""


def _named() -> Path | None:
    named = os.environ.get(ENV, "")
    if not named:
        return None
    found = shutil.which(named)
    if found is None:
        raise ToolchainError(f"{ENV}={named} is not an executable file (nor a command on PATH)")
    return Path(found)


@functools.cache
def opa_binary() -> Path:
    """The opa to run: $TRAINER_POLICY_OPA, else in a checkout the oldest pinned OPA (installed on first use),
    else (an installed package) the `opa` on PATH."""
    named = _named()
    if named is not None:
        return named
    if VERSIONS_FILE.is_file():  # a checkout: the build's own OPA, so every developer and CI judge with the same one
        try:
            return install(pins().oldest_opa)
        except (InstallError, VersionsError) as exc:
            raise ToolchainError(f"{exc}; {HOW_TO_OVERRIDE}") from exc
    found = shutil.which("opa")
    if found is not None:
        return Path(found)
    raise OpaUnavailable(f"no opa here: no `opa` on PATH and no tools/versions.json to install one; {HOW_TO_OVERRIDE}")


def main() -> int:
    try:
        path = opa_binary()
    except ToolchainError as exc:
        print(f"opa-toolchain: {exc}", file=sys.stderr)
        return 1
    print(f"OPA={path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
