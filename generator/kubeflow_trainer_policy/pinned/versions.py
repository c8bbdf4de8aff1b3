"""tools/versions.json: the Gatekeeper releases the project supports, the OPA each embeds, and the Regal and conftest
it lints and tests with, as Go modules to `go install`."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from kubeflow_trainer_policy.paths import PROJECT_ROOT

VERSIONS_FILE = PROJECT_ROOT / "tools" / "versions.json"

OPA_MODULE = "github.com/open-policy-agent/opa"
GATEKEEPER_MODULE = "github.com/open-policy-agent/gatekeeper/v3"
REGAL_MODULE = "github.com/open-policy-agent/regal"
CONFTEST_MODULE = "github.com/open-policy-agent/conftest"
KUBERNETES_MODULE = "k8s.io/kubernetes"


class VersionsError(Exception):
    """tools/versions.json is missing or malformed: one line naming the file and the field."""


@dataclass(frozen=True)
class Tool:
    """One command to `go install`: `package@version`, from `module`."""

    name: str
    """The binary's name and its cache folder (opa, gator, regal, conftest)."""
    module: str
    package: str
    version: str
    go_sum: tuple[str, ...] = ()
    """go.sum lines for modules the checksum database does not answer for (installed through a module that
    requires this one, so that Go verifies against these lines)."""
    module_dir: str | None = None
    """A module of the project's (relative to its root) that requires this one with its own go.mod and go.sum:
    `go install package` runs in it (kube-apiserver, whose staging modules Kubernetes replaces in its own go.mod,
    which `go install pkg@version` refuses)."""

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class GatekeeperRelease:
    release: str
    """The minor release (3.20)."""
    version: str
    """Its newest patch the proxy serves (v3.20.1)."""
    opa: str
    """The OPA its go.mod requires: the one that compiles templates in that Gatekeeper."""
    go_sum: tuple[str, ...] = ()
    gator_unavailable: str | None = None
    """Why its gator cannot be installed here, if it cannot."""

    @property
    def opa_tool(self) -> Tool:
        return Tool("opa", OPA_MODULE, OPA_MODULE, self.opa)

    @property
    def gator_tool(self) -> Tool | None:
        if self.gator_unavailable:
            return None
        return Tool("gator", GATEKEEPER_MODULE, f"{GATEKEEPER_MODULE}/cmd/gator", self.version, self.go_sum)

    @property
    def manager_tool(self) -> Tool | None:
        """The Gatekeeper manager (webhook, audit, controllers): the module root's main package. Its source is
        what gator's is, so it is unavailable exactly when gator is."""
        if self.gator_unavailable:
            return None
        return Tool("gatekeeper", GATEKEEPER_MODULE, GATEKEEPER_MODULE, self.version, self.go_sum)


@dataclass(frozen=True)
class Pins:
    gatekeeper: tuple[GatekeeperRelease, ...]
    regal: Tool
    conftest: Tool
    kube_apiserver: Tool | None = None
    """The API server of the live tests (tools/kube-apiserver), if tools/versions.json pins one."""

    def opas(self) -> list[Tool]:
        """Each distinct OPA of the supported releases, oldest release first."""
        seen: dict[str, Tool] = {}
        for release in self.gatekeeper:
            seen.setdefault(release.opa, release.opa_tool)
        return list(seen.values())

    def gators(self) -> list[Tool]:
        return [tool for release in self.gatekeeper if (tool := release.gator_tool) is not None]

    def managers(self) -> list[Tool]:
        """Each supported release's Gatekeeper manager that can be built, oldest first (not in all_tools: `make
        test` builds the oldest only, `make e2e` all of them)."""
        return [tool for release in self.gatekeeper if (tool := release.manager_tool) is not None]

    def all_tools(self) -> list[Tool]:
        return [*self.opas(), self.regal, self.conftest, *self.gators()]

    @property
    def oldest_opa(self) -> Tool:
        return self.gatekeeper[0].opa_tool


def _field(data: dict, key: str, where: str, path: Path) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.startswith("v"):
        raise VersionsError(f"{path}: {where}.{key}: expected a version string like v1.2.3, got {value!r}")
    return value


def load(path: Path = VERSIONS_FILE) -> Pins:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VersionsError(f"{path}: {exc}") from exc
    releases = data.get("gatekeeper")
    if not isinstance(releases, list) or not releases:
        raise VersionsError(f"{path}: gatekeeper: expected a non-empty list of releases")
    parsed = []
    for i, entry in enumerate(releases):
        where = f"gatekeeper[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("release"), str):
            raise VersionsError(f"{path}: {where}.release: expected a string like 3.20")
        go_sum = entry.get("go_sum", [])
        if not isinstance(go_sum, list) or not all(isinstance(line, str) for line in go_sum):
            raise VersionsError(f"{path}: {where}.go_sum: expected a list of go.sum lines")
        parsed.append(
            GatekeeperRelease(
                release=entry["release"],
                version=_field(entry, "version", where, path),
                opa=_field(entry, "opa", where, path),
                go_sum=tuple(go_sum),
                gator_unavailable=entry.get("gator_unavailable"),
            )
        )
    kube_apiserver = None
    kubernetes = data.get("kubernetes")
    if kubernetes is not None:
        if not isinstance(kubernetes, dict) or not isinstance(kubernetes.get("module_dir"), str):
            raise VersionsError(f"{path}: kubernetes.module_dir: expected the folder of the kube-apiserver module")
        version = _field(kubernetes, "version", "kubernetes", path)
        kube_apiserver = Tool(
            "kube-apiserver",
            KUBERNETES_MODULE,
            f"{KUBERNETES_MODULE}/cmd/kube-apiserver",
            version,
            module_dir=kubernetes["module_dir"],
        )
    return Pins(
        gatekeeper=tuple(parsed),
        kube_apiserver=kube_apiserver,
        regal=Tool("regal", REGAL_MODULE, REGAL_MODULE, _field(data, "regal", "(top)", path)),
        conftest=Tool("conftest", CONFTEST_MODULE, CONFTEST_MODULE, _field(data, "conftest", "(top)", path)),
    )


@functools.cache
def pins() -> Pins:
    return load()
