"""Kubernetes' own ValidatingAdmissionPolicy code on this machine: tools/cel (a small command on
k8s.io/apiserver's admission-policy packages) built from the Go module proxy once per CEL library the project
supports, and cached; or a build of it a user names with $TRAINER_POLICY_CEL.

A CEL library is the k8s.io/apiserver and github.com/google/cel-go (with every other module the command links) that
one supported Gatekeeper release vendors: tools/cel/modules/<library>/go.mod and go.sum pin each module at the
version that Gatekeeper's own go.mod resolves (docs/cel.md, "One build per CEL library"), and
tools/cel/libraries.json names the releases and the build tags the library's API needs. Each Gatekeeper runs its
own library's cost accounting and functions, so every budget test runs on each of them.
`python -m kubeflow_trainer_policy.cel.toolchain` builds every library (progress on stderr) and prints
`CEL[<library>]=<path>` for each; the newest is the default.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kubeflow_trainer_policy.gotools import builder
from kubeflow_trainer_policy.gotools.builder import GoTool, ToolchainError
from kubeflow_trainer_policy.paths import PROJECT_ROOT

ENV = "TRAINER_POLICY_CEL"
SOURCE = PROJECT_ROOT / "tools" / "cel"
LIBRARIES_FILE = SOURCE / "libraries.json"
MODULES = SOURCE / "modules"
HOW_TO_OVERRIDE = f"set {ENV}=/path/to/cel (a build of tools/cel) to use one of your own"
TOOL = GoTool(name="cel", title="CEL", source=SOURCE, env=ENV, main="apiserver", override_hint=HOW_TO_OVERRIDE)
MODULE_ERROR = re.compile(r"(?P<module>[\w.\-~/]+)@(?P<version>v[\w.\-+]+): (?P<reason>.*)")
BUILD_TIMEOUT = 3600
"""Seconds for one library's download and build (a cold module cache on a busy 2-core machine)."""


class CelUnavailable(ToolchainError):
    """No CEL evaluator: an installed package (no tools/cel source to build) and no $TRAINER_POLICY_CEL."""


@dataclass(frozen=True)
class Library:
    """One CEL library: a Gatekeeper release line's (or a Kubernetes minor's) k8s.io/apiserver and cel-go."""

    name: str
    """The folder under tools/cel/modules and the binary's name (`gatekeeper-3.20`)."""
    apiserver: str
    cel_go: str
    used_by: str
    """Who runs this library: the Gatekeeper releases whose go.mod it copies, and the Kubernetes minor."""
    tags: tuple[str, ...]
    """Build tags for the library's API (tools/cel/library_*.go, validator_*.go)."""
    modules: Path = MODULES
    """The folder holding <name>/go.mod and go.sum."""

    @property
    def module_dir(self) -> Path:
        return self.modules / self.name


@functools.cache
def libraries() -> tuple[Library, ...]:
    """The supported libraries, oldest first (tools/cel/libraries.json)."""
    try:
        document = json.loads(LIBRARIES_FILE.read_text())
        return tuple(
            Library(
                name=entry["name"],
                apiserver=entry["apiserver"],
                cel_go=entry["cel-go"],
                used_by=entry["used_by"],
                tags=tuple(entry.get("tags", [])),
            )
            for entry in document["libraries"]
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ToolchainError(f"{LIBRARIES_FILE}: libraries: {exc}") from exc


def library(name: str | None = None) -> Library:
    """The library of that name; the newest when none is named."""
    known = libraries()
    if name is None:
        return known[-1]
    for entry in known:
        if entry.name == name:
            return entry
    raise ToolchainError(f"{LIBRARIES_FILE}: no CEL library named {name!r} (known: {', '.join(e.name for e in known)})")


def _log(message: str) -> None:
    print(f"cel-toolchain: {message}", file=sys.stderr, flush=True)


def source_key(lib: Library) -> str:
    """A digest of the command's source, the library's pins and tags: any change builds a new binary."""
    if not SOURCE.is_dir():
        raise CelUnavailable(f"the CEL tool's source {SOURCE} is not here (an installed package); {HOW_TO_OVERRIDE}")
    digest = hashlib.sha256(" ".join(lib.tags).encode() + b"\0")
    files = [*sorted(SOURCE.glob("*.go")), lib.module_dir / "go.mod", lib.module_dir / "go.sum"]
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _go() -> str:
    found = shutil.which("go")
    if found is None:
        raise CelUnavailable(f"no `go` command on PATH to build tools/cel; {HOW_TO_OVERRIDE}")
    return found


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOFLAGS="-mod=readonly -buildvcs=false",  # exactly the committed go.mod/go.sum, nothing resolved anew
        CGO_ENABLED="0",
        GOWORK="off",
    )
    return env


def _download(lib: Library, work: Path, env: dict[str, str]) -> None:
    """Every module of the build from the Go module proxy (or the module cache); one line naming the first module
    the proxy cannot serve."""
    result = subprocess.run(
        [_go(), "mod", "download", "-json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    decoder, text, index = json.JSONDecoder(), result.stdout, 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        module, index = decoder.raw_decode(text, index)
        if module.get("Error"):
            reason = module["Error"].strip().splitlines()[-1]
            raise CelUnavailable(
                f"{lib.name}: the Go module proxy cannot serve {module.get('Path')}@{module.get('Version')}: "
                f"{reason}; {HOW_TO_OVERRIDE}"
            )
    if result.returncode != 0:
        # A module the graph needs before any download (a go.mod of the build list) fails on stderr:
        # "go: k8s.io/apiserver@v0.33.999: reading .../v0.33.999.mod: 403 Forbidden", then the server's words.
        text = " ".join(line.strip() for line in result.stderr.strip().splitlines()) or "no output"
        found = MODULE_ERROR.search(text)
        if found:
            raise CelUnavailable(
                f"{lib.name}: the Go module proxy cannot serve {found['module']}@{found['version']}: "
                f"{found['reason']}; {HOW_TO_OVERRIDE}"
            )
        raise CelUnavailable(f"{lib.name}: go mod download failed: {text}; {HOW_TO_OVERRIDE}")


def _build(lib: Library, binary: Path, cache: Path) -> None:
    env = _go_env()
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=f"build-{lib.name}-") as tmp:
        work = Path(tmp)
        for path in SOURCE.glob("*.go"):
            shutil.copy2(path, work / path.name)
        for name in ("go.mod", "go.sum"):
            shutil.copy2(lib.module_dir / name, work / name)
        started = time.monotonic()
        _log(f"{lib.name}: fetching k8s.io/apiserver {lib.apiserver}, cel-go {lib.cel_go} and their modules")
        _download(lib, work, env)
        _log(f"{lib.name}: compiling (a few minutes on a cold build cache)")
        partial = binary.with_name(binary.name + ".partial")
        args = [_go(), "build", "-trimpath", "-o", str(partial), "-ldflags", f"-X main.library={lib.name}"]
        if lib.tags:
            args += ["-tags", ",".join(lib.tags)]
        result = subprocess.run(
            [*args, "."], cwd=work, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
        )
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines() or ["no output"]
            raise CelUnavailable(f"{lib.name}: go build failed: {' '.join(lines[:3])}; {HOW_TO_OVERRIDE}")
        partial.replace(binary)  # nothing half-written under the binary's name
        _log(f"{lib.name}: built {binary} in {time.monotonic() - started:.0f} s")


def ensure_built(lib: Library | None = None, cache: Path | None = None) -> Path:
    """The cached binary of the library's current source and pins, built first when there is none."""
    lib = lib or library()
    cache = cache or builder.cache_dir(TOOL)
    binary = cache / "bin" / f"cel-{lib.name}-{source_key(lib)}"
    if builder._works(binary):
        return binary
    with builder.locked(cache / f".lock-{lib.name}"):  # one build of a library at a time (worktrees share the cache)
        if not builder._works(binary):
            _build(lib, binary, cache)
    if not builder._works(binary):
        raise CelUnavailable(f"{lib.name}: the build at {binary} does not run `cel version`; {HOW_TO_OVERRIDE}")
    return binary


@functools.cache
def cel_binary(name: str | None = None) -> Path:
    """The evaluator to run: $TRAINER_POLICY_CEL (whatever library is asked for), else in a checkout the cached
    build of tools/cel on the named library (the newest when none is named), built on first use."""
    named = builder.named_binary(TOOL)
    if named is not None:
        return named
    if SOURCE.is_dir():
        return ensure_built(library(name))
    raise CelUnavailable(f"no CEL evaluator here: no tools/cel source to build; {HOW_TO_OVERRIDE}")


def main() -> int:
    """Build (or reuse) every library's binary; print `CEL[<library>]=<path>` for each."""
    try:
        paths = [(lib.name, cel_binary(lib.name)) for lib in libraries()]
    except ToolchainError as exc:
        print(f"cel-toolchain: {exc}", file=sys.stderr)
        return 1
    for name, path in paths:
        print(f"CEL[{name}]={path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
