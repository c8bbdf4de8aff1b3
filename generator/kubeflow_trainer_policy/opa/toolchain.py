"""The real OPA on this machine: tools/opa (a small command on OPA's own Go packages) built once from Debian's
packages and cached, or the `opa` a user names with $TRAINER_POLICY_OPA.

Debian's unstable suite ships OPA's Go source (golang-github-open-policy-agent-opa-dev, pinned in
tools/opa/debian.json) with every dependency as a golang-*-dev package; kubeflow_trainer_policy.gotools builds the
command from them (only the packages it imports) into ~/.cache/kubeflow-trainer-policy/opa.
`python -m kubeflow_trainer_policy.opa.toolchain` builds it and prints `OPA=<path>`.
"""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path

from kubeflow_trainer_policy.gotools import builder
from kubeflow_trainer_policy.gotools.builder import Builder, GoTool, ToolchainError
from kubeflow_trainer_policy.paths import PROJECT_ROOT

ENV = "TRAINER_POLICY_OPA"
SOURCE = PROJECT_ROOT / "tools" / "opa"
PINS = SOURCE / "debian.json"
HOW_TO_OVERRIDE = f"set {ENV}=/path/to/opa (or {ENV}=opa for the one on PATH) to use an opa of your own"
TOOL = GoTool(name="opa", title="OPA", source=SOURCE, env=ENV, main="opa", override_hint=HOW_TO_OVERRIDE)

__all__ = ["ENV", "PINS", "TOOL", "Builder", "OpaUnavailable", "ToolchainError", "ensure_built", "opa_binary"]


class OpaUnavailable(ToolchainError):
    """No opa at all: an installed package (no tools/opa source to build), no $TRAINER_POLICY_OPA, no `opa` on PATH."""


def cache_dir() -> Path:
    return builder.cache_dir(TOOL)


def ensure_built(cache: Path | None = None, pins: Path = PINS) -> Path:
    return builder.ensure_built(TOOL, cache, pins)


@functools.cache
def opa_binary() -> Path:
    """The opa to run: $TRAINER_POLICY_OPA, else in a checkout the cached build of tools/opa (built on first use),
    else (an installed package) the `opa` on PATH."""
    named = builder.named_binary(TOOL)
    if named is not None:
        return named
    if SOURCE.is_dir():  # a checkout: the build's own OPA, so every developer and CI judge with the same one
        return ensure_built()
    found = shutil.which("opa")
    if found is not None:
        return Path(found)
    raise OpaUnavailable(f"no opa here: no `opa` on PATH and no tools/opa source to build; {HOW_TO_OVERRIDE}")


def main() -> int:
    return builder.print_binary(TOOL, opa_binary)


if __name__ == "__main__":
    sys.exit(main())
