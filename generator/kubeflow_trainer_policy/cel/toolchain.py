"""Kubernetes' own ValidatingAdmissionPolicy code on this machine: tools/cel (a small command on
k8s.io/apiserver's admission-policy packages) built once from Debian's packages and cached, or a build of it a
user names with $TRAINER_POLICY_CEL.

Debian's unstable suite ships the API server's Go source (golang-k8s-apiserver-dev, pinned in
tools/cel/debian.json) with its CEL libraries (cel.dev/cel-go as golang-cel-cel-go-dev) and every other dependency
as a golang-*-dev package; kubeflow_trainer_policy.gotools builds the command from them (only the packages it
imports) into ~/.cache/kubeflow-trainer-policy/cel. `python -m kubeflow_trainer_policy.cel.toolchain` builds it and
prints `CEL=<path>`.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from kubeflow_trainer_policy.gotools import builder
from kubeflow_trainer_policy.gotools.builder import GoTool, ToolchainError
from kubeflow_trainer_policy.paths import PROJECT_ROOT

ENV = "TRAINER_POLICY_CEL"
SOURCE = PROJECT_ROOT / "tools" / "cel"
PINS = SOURCE / "debian.json"
HOW_TO_OVERRIDE = f"set {ENV}=/path/to/cel (a build of tools/cel) to use one of your own"
TOOL = GoTool(name="cel", title="CEL", source=SOURCE, env=ENV, main="apiserver", override_hint=HOW_TO_OVERRIDE)


class CelUnavailable(ToolchainError):
    """No CEL evaluator: an installed package (no tools/cel source to build) and no $TRAINER_POLICY_CEL."""


def ensure_built(cache: Path | None = None, pins: Path = PINS) -> Path:
    return builder.ensure_built(TOOL, cache, pins)


@functools.cache
def cel_binary() -> Path:
    """The evaluator to run: $TRAINER_POLICY_CEL, else in a checkout the cached build of tools/cel (built on first
    use)."""
    named = builder.named_binary(TOOL)
    if named is not None:
        return named
    if SOURCE.is_dir():
        return ensure_built()
    raise CelUnavailable(f"no CEL evaluator here: no tools/cel source to build; {HOW_TO_OVERRIDE}")


def main() -> int:
    return builder.print_binary(TOOL, cel_binary)


if __name__ == "__main__":
    sys.exit(main())
