"""The real tools at the versions users run (tools/versions.json): every supported Gatekeeper's OPA and gator,
Regal and conftest, installed from the Go module proxy by `make tools` (`python -m kubeflow_trainer_policy.pinned`).

A user who brings a binary of their own names it with $TRAINER_POLICY_OPA, $TRAINER_POLICY_GATOR,
$TRAINER_POLICY_REGAL or $TRAINER_POLICY_CONFTEST (a path, or a command on PATH): the checks then run with that one
instead of every pinned version."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kubeflow_trainer_policy.pinned.install import InstallError, install
from kubeflow_trainer_policy.pinned.versions import Tool, pins

__all__ = ["InstallError", "Installed", "conftest", "gators", "opas", "regal"]

ENV = {"opa": "TRAINER_POLICY_OPA", "gator": "TRAINER_POLICY_GATOR", "regal": "TRAINER_POLICY_REGAL"}
ENV["conftest"] = "TRAINER_POLICY_CONFTEST"


@dataclass(frozen=True)
class Installed:
    """A binary and what it stands for: the pinned version it was installed as, or the user's own."""

    label: str
    """`opa v1.7.1 (Gatekeeper 3.20)`, or `$TRAINER_POLICY_OPA=/usr/bin/opa`."""
    path: Path
    version: str | None
    """The pinned version, None for a user's binary."""


def _named(name: str) -> Installed | None:
    env = ENV[name]
    named = os.environ.get(env, "")
    if not named:
        return None
    found = shutil.which(named)
    if found is None:
        raise InstallError(f"{env}={named} is not an executable file (nor a command on PATH)")
    return Installed(f"${env}={named}", Path(found), None)


def _releases_of(tool: Tool) -> str:
    """Which supported Gatekeeper releases a pinned OPA or gator stands for."""
    attr = "opa" if tool.name == "opa" else "version"
    names = [r.release for r in pins().gatekeeper if getattr(r, attr) == tool.version]
    return f" (Gatekeeper {', '.join(names)})" if names else ""


def _installed(tool: Tool) -> Installed:
    return Installed(f"{tool.label}{_releases_of(tool)}", install(tool), tool.version)


def opas() -> list[Installed]:
    """$TRAINER_POLICY_OPA, else the OPA of every supported Gatekeeper."""
    named = _named("opa")
    return [named] if named is not None else [_installed(t) for t in pins().opas()]


def gators() -> list[Installed]:
    named = _named("gator")
    return [named] if named is not None else [_installed(t) for t in pins().gators()]


def regal() -> Installed:
    return _named("regal") or _installed(pins().regal)


def conftest() -> Installed:
    return _named("conftest") or _installed(pins().conftest)
