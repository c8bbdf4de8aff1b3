"""One builder for the project's Go commands: a command folder (tools/<name>) with a `debian.json` of pins, built
from Debian's own Go packages and cached.

Debian's unstable suite ships Go libraries as golang-*-dev packages laid out for GOPATH builds
(/usr/share/gocode/src/<import path>), and Go toolchains. The build fetches the pinned toolchain and the pinned
main package, then only the packages the command imports: it asks `go list` which import paths are missing, looks
for each among the Debian `Depends` of the package whose code imports it (the package metadata, through a private
APT configuration), fetches that package and asks again, until nothing is missing. Everything lands in
~/.cache/kubeflow-trainer-policy/<name> (or $KTP_CACHE_DIR/<name>), nothing on the machine changes, and the binary
is reused until the command's source or pins change.

The pins (`tools/<name>/debian.json`): `suite`, `go` {package, version prefix}, the main package under the tool's
own key {package, version prefix}, and `direct`: the packages to search for the command's own imports.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kubeflow_trainer_policy.gotools.debian import ArchiveError, PrivateApt, find_mirror, log

GOCODE = "usr/share/gocode/src"
MAX_ROUNDS = 40
"""Rounds of `go list` -> fetch; each round fetches every package that was missing in it."""
TRANSITIVE_LEVELS = 3
"""How far below the importing package's own Depends a missing import is looked for."""


GENERIC_WORDS = frozenset({"github", "com", "org", "io", "net", "golang", "go", "google", "gopkg", "in", "x"})
"""Words of import paths and package names that say nothing about which package holds a Go package."""


def _name_score(package: str, import_path: str) -> int:
    """How many words of the package's name (golang-<words>-dev) are elements of the import path."""
    tokens = set(re.split(r"[/.\-_]", import_path.lower())) - GENERIC_WORDS
    words = package.removeprefix("golang-").removesuffix("-dev").split("-")
    return sum(w in tokens for w in words)


class ToolchainError(Exception):
    """A tool cannot be had: one line saying what is missing and how to point at a build of one's own."""


@dataclass(frozen=True)
class GoTool:
    """One Go command of the project and how a user replaces it."""

    name: str
    """The folder under tools/, the cache folder, the binary's name prefix and the progress lines' label."""
    title: str
    """How messages name it (`OPA`, `CEL`)."""
    source: Path
    env: str
    """The environment variable naming a binary of the user's own."""
    main: str
    """The key in debian.json of the main package the command is built on."""
    override_hint: str
    """What to set instead, said at the end of every failure."""

    @property
    def pins(self) -> Path:
        return self.source / "debian.json"


def named_binary(tool: GoTool) -> Path | None:
    """The user's own build named by the tool's environment variable (a path or a command on PATH), if any."""
    named = os.environ.get(tool.env, "")
    if not named:
        return None
    found = shutil.which(named)
    if found is None:
        raise ToolchainError(f"{tool.env}={named} is not an executable file (nor a command on PATH)")
    return Path(found)


def print_binary(tool: GoTool, find: Callable[[], Path]) -> int:
    """A toolchain module's command line: build or find the binary and print `<TITLE>=<path>`."""
    try:
        path = find()
    except ToolchainError as exc:
        print(f"{tool.name}-toolchain: {exc}", file=sys.stderr)
        return 1
    print(f"{tool.title}={path}")
    return 0


def project_cache_dir() -> Path:
    """The project's cache: $KTP_CACHE_DIR, else kubeflow-trainer-policy under $XDG_CACHE_HOME or ~/.cache."""
    base = os.environ.get("KTP_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubeflow-trainer-policy"
    )
    return Path(base)


def cache_dir(tool: GoTool) -> Path:
    return project_cache_dir() / tool.name


def source_key(tool: GoTool) -> str:
    """A digest of the command's source and pins: a changed source builds a new binary."""
    if not tool.source.is_dir():
        raise ToolchainError(
            f"the {tool.title} tool's source {tool.source} is not here (an installed package); {tool.override_hint}"
        )
    digest = hashlib.sha256()
    for path in sorted(p for p in tool.source.iterdir() if p.suffix in (".go", ".json")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _works(binary: Path) -> bool:
    if not binary.is_file():
        return False
    try:
        result = subprocess.run([str(binary), "version"], capture_output=True, timeout=60, check=False)
    except OSError:
        return False
    return result.returncode == 0


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One builder or installer of a thing at a time, across processes (test workers, worktrees, a second make)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_built(tool: GoTool, cache: Path | None = None, pins: Path | None = None) -> Path:
    """The cached binary of the tool's current source, built first when there is none (its `version` must run)."""
    cache = cache or cache_dir(tool)
    binary = cache / "bin" / f"{tool.name}-{source_key(tool)}"
    if _works(binary):
        return binary
    with locked(cache / ".lock"):  # one build at a time across processes (worktrees share the cache)
        if _works(binary):
            return binary
        try:
            Builder(tool, cache, pins or tool.pins).build(binary)
        except ArchiveError as exc:
            message = f"cannot build the {tool.title} tool from Debian: {exc}; {tool.override_hint}"
            raise ToolchainError(message) from exc
    return binary


class Builder:
    """Fetches the pinned packages and the import closure of a tool into cache/root, and builds it."""

    def __init__(self, tool: GoTool, cache: Path, pins: Path | None = None):
        self.tool = tool
        self.cache = cache
        self.pins_file = pins or tool.pins
        self.pins = json.loads(self.pins_file.read_text())
        self.root = cache / "root"
        self.state_file = cache / "root.json"
        mirror = os.environ.get("KTP_DEBIAN_MIRROR") or find_mirror()
        self.apt = PrivateApt(cache / "apt", self.pins["suite"], mirror, tool=tool.name)
        self.state = self._load_state()

    def _pins_digest(self) -> str:
        return hashlib.sha256(self.pins_file.read_bytes()).hexdigest()

    def _load_state(self) -> dict:
        """{"pins": digest, "packages": {name: {"version": v, "dirs": [import paths]}}}; reset when the pins change."""
        if self.state_file.is_file() and self.root.is_dir():
            state = json.loads(self.state_file.read_text())
            if state.get("pins") == self._pins_digest():
                return state
        shutil.rmtree(self.root, ignore_errors=True)
        return {"pins": self._pins_digest(), "packages": {}}

    def _save_state(self) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1, sort_keys=True))
        tmp.replace(self.state_file)

    def candidate(self, package: str, prefix: str = "") -> str:
        """The archive's version of the package, which must start with the pinned prefix."""
        version = self.apt.show(package).get("Version", "")
        if not version:
            raise ArchiveError(f"Debian {self.pins['suite']} has no package {package} (the archive has moved)")
        if prefix and not version.startswith(prefix):
            raise ArchiveError(
                f"Debian {self.pins['suite']} has {package} {version}, not the pinned {prefix.rstrip('-.+')}* "
                "(the archive has moved)"
            )
        return version

    def fetch(self, package: str, prefix: str = "") -> None:
        if package in self.state["packages"]:
            return
        version = self.candidate(package, prefix)
        log(f"fetch {package} {version}", self.tool.name)
        names = self.apt.fetch(package, version, self.root)
        dirs = sorted(
            {n[len(GOCODE) + 1 :].rsplit("/", 1)[0] for n in names if n.startswith(GOCODE + "/") and n.endswith(".go")}
        )
        self.state["packages"][package] = {"version": version, "dirs": dirs}
        self._save_state()

    def goroot(self) -> Path:
        go = self.pins["go"]
        self.fetch(go["package"], go["version"])
        for dep in self.apt.depends(go["package"]) if not self._goroot_complete() else []:
            self.fetch(dep.providers[0] if dep.providers else dep.name)
        found = sorted(self.root.glob("usr/lib/go-*/bin/go"))
        if not found:
            raise ArchiveError(f"{go['package']} has no usr/lib/go-*/bin/go")
        return found[-1].parent.parent

    def _goroot_complete(self) -> bool:
        return any(self.root.glob("usr/lib/go-*/src/runtime/proc.go"))

    def go_env(self, goroot: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
        env.update(
            GOROOT=str(goroot),
            GOPATH=str(self.root / "usr/share/gocode"),
            GO111MODULE="off",  # Debian's layout is a GOPATH: /usr/share/gocode/src/<import path>
            GOPROXY="off",
            GOTOOLCHAIN="local",
            GOFLAGS="",
            GOENV="off",
            CGO_ENABLED="0",
            GOCACHE=str(self.cache / "gocache"),
            PATH=f"{goroot / 'bin'}:{os.environ.get('PATH', '')}",
        )
        return env

    def missing_imports(self, env: dict[str, str]) -> list[tuple[str, str]]:
        """(importing package's directory, missing import path) for every import `go list` cannot find."""
        result = subprocess.run(
            ["go", "list", "-e", "-deps", "-json", "."],
            cwd=self.tool.source,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 and not result.stdout:
            raise ArchiveError(f"go list failed: {(result.stderr.strip().splitlines() or ['no output'])[-1]}")
        decoder = json.JSONDecoder()
        text, index, dirs, missing = result.stdout, 0, {}, []
        while index < len(text):
            while index < len(text) and text[index].isspace():
                index += 1
            if index >= len(text):
                break
            package, index = decoder.raw_decode(text, index)
            dirs[package["ImportPath"]] = package.get("Dir", "")
            error = package.get("Error") or {}
            if "cannot find package" in error.get("Err", ""):
                # ImportStack ends with the importing package; Pos is the importing file.
                stack = error.get("ImportStack") or ["."]
                missing.append((stack[-1], error.get("Pos", ""), package["ImportPath"]))
        return [
            (str(Path(pos.split(":")[0]).parent) if pos else dirs.get(importer, str(self.tool.source)), path)
            for importer, pos, path in missing
        ]

    def owner(self, directory: str) -> str | None:
        """The fetched package that holds the Go files of this directory (None for the command itself)."""
        prefix = str(self.root / GOCODE) + "/"
        if not directory.startswith(prefix):
            return None
        rel = directory[len(prefix) :]
        for name, info in self.state["packages"].items():
            if rel in info["dirs"]:
                return name
        return None

    def candidates(self, owner: str | None) -> list[str]:
        if owner is None:
            return list(self.pins["direct"])
        names = []
        for dep in self.apt.depends(owner):
            names += [p for p in dep.providers if p.startswith("golang-")]
        return names

    def _score(self, package: str, import_path: str) -> tuple[int, int]:
        homepage = re.sub(r"^https?://(www\.)?", "", self.apt.show(package).get("Homepage", "")).rstrip("/").lower()
        lowered = import_path.lower()
        exact = len(homepage) if homepage and (lowered == homepage or lowered.startswith(homepage + "/")) else 0
        return exact, _name_score(package, import_path)

    def provides(self, import_path: str) -> bool:
        """Whether the fetched tree has the import path, also as GOPATH mode's minimal module compatibility finds a
        /vN path: without the /vN element, in a folder whose go.mod names the module with it."""
        if (self.root / GOCODE / import_path).is_dir():
            return True
        parts = import_path.split("/")
        for i, part in enumerate(parts):
            if not re.fullmatch(r"v[0-9]+", part):
                continue
            go_mod = self.root / GOCODE / "/".join(parts[:i]) / "go.mod"
            module = "/".join(parts[: i + 1])
            if (
                go_mod.is_file()
                and re.search(rf"^module\s+\"?{re.escape(module)}\"?\s*$", go_mod.read_text(errors="replace"), re.M)
                and (self.root / GOCODE / "/".join(parts[:i] + parts[i + 1 :])).is_dir()
            ):
                return True
        return False

    def provide(self, directory: str, import_path: str) -> None:
        """Fetches the dependency of the importing package that holds import_path: the best match first (by
        Homepage and name), a transitional package's own dependencies in its place; then, as Debian often leaves a
        package's imports to its dependencies' dependencies (golang-k8s-apiserver-dev reaches k8s.io/utils only
        through golang-k8s-apimachinery-dev), the dependencies of those, level by level, that match by name."""
        owner = self.owner(directory)
        queue = sorted(self.candidates(owner), key=lambda p: self._score(p, import_path), reverse=True)
        tried: list[str] = []
        while queue:
            package = queue.pop(0)
            if package in tried:
                continue
            tried.append(package)
            self.fetch(package)
            if self.provides(import_path):
                return
            if not self.state["packages"][package]["dirs"]:  # transitional: look where it points
                deps = [p for d in self.apt.depends(package) for p in d.providers if p.startswith("golang-")]
                queue[:0] = sorted(deps, key=lambda p: self._score(p, import_path), reverse=True)
        if self._provide_transitively(tried, import_path):
            return
        who = owner or f"tools/{self.tool.name}"
        raise ArchiveError(
            f"no Debian dependency of {who} provides the Go package {import_path} (tried {', '.join(tried) or 'none'})"
        )

    def _provide_transitively(self, tried: list[str], import_path: str, levels: int = TRANSITIVE_LEVELS) -> bool:
        """Fetches, level by level below the packages tried, the golang-* dependencies whose name shares a word
        with the import path (never one that shares none), best match first, until one provides it."""
        log(f"{import_path}: looking below the importing package's Depends", self.tool.name)
        seen, frontier = set(tried), list(tried)
        for _ in range(levels):
            level = {p for deps in self.apt.depends_of(frontier).values() for d in deps for p in d.providers}
            level = {p for p in level if p.startswith("golang-")} - seen
            seen |= level
            named = [p for p in level if _name_score(p, import_path)]  # apt-cache show only for these
            for package in sorted(named, key=lambda p: self._score(p, import_path), reverse=True):
                tried.append(package)
                self.fetch(package)
                if self.provides(import_path):
                    return True
            frontier = sorted(level)
        return False

    def build(self, binary: Path) -> None:
        main, go = self.pins[self.tool.main], self.pins["go"]
        for pin in (main, go):  # before any download: the pins still hold
            if pin["package"] not in self.state["packages"]:
                self.candidate(pin["package"], pin["version"])
        goroot = self.goroot()
        self.fetch(main["package"], main["version"])
        env = self.go_env(goroot)
        for _ in range(MAX_ROUNDS):
            missing = self.missing_imports(env)
            if not missing:
                break
            for directory, import_path in missing:
                if not self.provides(import_path):
                    self.provide(directory, import_path)
        else:
            raise ArchiveError(f"the import closure did not settle after {MAX_ROUNDS} rounds")
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_name(binary.name + ".tmp")
        log(f"go build tools/{self.tool.name} ({len(self.state['packages'])} Debian packages)", self.tool.name)
        main_version = self.state["packages"][main["package"]]["version"]
        result = subprocess.run(
            # main.debianVersion: the main package's Debian version, for the command's `version` (if it has one)
            ["go", "build", "-trimpath", "-ldflags", f"-X main.debianVersion={main_version}", "-o", str(tmp), "."],
            cwd=self.tool.source,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            first = next(
                (line for line in result.stderr.splitlines() if line and not line.startswith("#")), "no output"
            )
            raise ArchiveError(f"go build of tools/{self.tool.name} failed: {first}")
        versions = {name: info["version"] for name, info in sorted(self.state["packages"].items())}
        binary.with_name(binary.name + ".packages.json").write_text(json.dumps(versions, indent=1) + "\n")
        tmp.replace(binary)
        for old in binary.parent.glob(f"{self.tool.name}-*"):
            if not old.name.startswith(binary.name):
                old.unlink(missing_ok=True)
        shutil.rmtree(self.apt.root / "lists", ignore_errors=True)  # ~11 MB of package lists, only for building
        log(f"built {binary}", self.tool.name)
