"""Debian packages through a private APT configuration: `apt-get download` + `dpkg-deb -x` into a cache folder,
with the package lists, archives and state of its own, so nothing on the machine changes (the way
scripts/ensure-kube-apiserver.sh fetches Go 1.15 and etcd)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
DEFAULT_MIRROR = "http://deb.debian.org/debian"


class ArchiveError(Exception):
    """The archive cannot give what is needed: one line naming the package and what is missing."""


def log(message: str, tool: str = "go") -> None:
    """One progress line on stderr, named after the tool being built (`[opa-toolchain] ...`)."""
    print(f"[{tool}-toolchain] {message}", file=sys.stderr, flush=True)


def find_mirror() -> str:
    """The first Debian mirror of the machine's APT sources (deb822 or one-line), else deb.debian.org."""
    sources = Path("/etc/apt/sources.list.d")
    for path in sorted(sources.glob("*.sources")) if sources.is_dir() else []:
        for stanza in path.read_text(errors="replace").split("\n\n"):
            fields = dict(
                (line.split(":", 1)[0].strip(), line.split(":", 1)[1].strip())
                for line in stanza.splitlines()
                if ":" in line and not line.startswith("#")
            )
            uris = fields.get("URIs", "").split()
            if uris and "deb" in fields.get("Types", "").split() and re.search(r"/debian/?$", uris[0]):
                return uris[0].rstrip("/")
    for path in [Path("/etc/apt/sources.list"), *sorted(sources.glob("*.list"))] if sources.is_dir() else []:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            words = [w for w in re.sub(r"\[[^]]*\]", "", line).split() if w]
            if len(words) >= 3 and words[0] == "deb" and re.search(r"/debian/?$", words[1]):
                return words[1].rstrip("/")
    return DEFAULT_MIRROR


@dataclass(frozen=True)
class Dependency:
    name: str
    providers: tuple[str, ...]
    """The real packages that provide it (itself when it is a real package)."""


@dataclass
class PrivateApt:
    """apt-get and apt-cache with a configuration, lists, state and archives under `root` only."""

    root: Path
    suite: str
    mirror: str
    tool: str = "go"
    """The tool these packages are for: names the progress lines."""
    _updated: bool = False
    _show_cache: dict[str, dict[str, str]] = field(default_factory=dict)
    _depends_cache: dict[str, list[Dependency]] = field(default_factory=dict)

    def options(self) -> list[str]:
        r = self.root
        return [
            "-o", f"Dir::Etc::SourceList={r}/sources.list",
            "-o", f"Dir::Etc::SourceParts={r}/parts",
            "-o", f"Dir::Etc::Preferences={r}/prefs/none",
            "-o", f"Dir::Etc::PreferencesParts={r}/prefs",
            "-o", f"Dir::State={r}",
            "-o", f"Dir::State::Lists={r}/lists",
            "-o", f"Dir::State::status={r}/status",
            "-o", f"Dir::Cache={r}",
            "-o", f"Dir::Cache::Archives={r}/archives",
            "-o", f"Dir::Cache::pkgcache={r}/pkgcache.bin",  # each apt-cache call would parse the lists again
            "-o", "Dir::Cache::srcpkgcache=",
            "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1",
        ]  # fmt: skip

    def update(self) -> None:
        if self._updated:
            return
        for command in ("apt-get", "apt-cache", "dpkg-deb"):
            if shutil.which(command) is None:
                raise ArchiveError(f"{command} is required to fetch Go packages from Debian")
        if not KEYRING.is_file():
            raise ArchiveError(f"{KEYRING} is missing (package debian-archive-keyring)")
        for sub in ("lists/partial", "archives/partial", "parts", "prefs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "status").write_text("")
        (self.root / "sources.list").write_text(f"deb [signed-by={KEYRING}] {self.mirror} {self.suite} main\n")
        log(f"apt-get update (private config in {self.root}, {self.mirror} {self.suite})", self.tool)
        result = subprocess.run(
            ["apt-get", "-q", *self.options(), "-o", "APT::Update::Error-Mode=any", "update"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise ArchiveError(f"private apt-get update of {self.mirror} {self.suite} failed: {last}")
        self._updated = True

    def show(self, package: str) -> dict[str, str]:
        """The candidate's fields (Version, Depends, Homepage...); empty when the archive has no such package."""
        if package not in self._show_cache:
            self.update()
            result = subprocess.run(
                ["apt-cache", *self.options(), "show", "--no-all-versions", package],
                capture_output=True,
                text=True,
                check=False,
            )
            fields: dict[str, str] = {}
            if result.returncode == 0:
                for line in result.stdout.splitlines():
                    if line and not line[0].isspace() and ":" in line:
                        key, value = line.split(":", 1)
                        fields.setdefault(key, value.strip())
            self._show_cache[package] = fields
        return self._show_cache[package]

    def depends(self, package: str) -> list[Dependency]:
        """Direct `Depends` of the candidate, virtual packages with their providers."""
        return self.depends_of([package])[package]

    def depends_of(self, packages: list[str]) -> dict[str, list[Dependency]]:
        """`depends` of several packages, asked in one apt-cache call (each call parses the lists) and kept."""
        missing = [p for p in dict.fromkeys(packages) if p not in self._depends_cache]
        if missing:
            self.update()
            result = subprocess.run(
                ["apt-cache", *self.options(), "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
                 "--no-breaks", "--no-replaces", "--no-enhances", *missing],
                capture_output=True,
                text=True,
                check=False,
            )  # fmt: skip
            self._depends_cache.update({p: [] for p in missing})
            self._depends_cache.update(_parse_depends(result.stdout))
        return {p: self._depends_cache[p] for p in packages}

    def fetch(self, package: str, version: str, dest: Path) -> list[str]:
        """Downloads package=version and extracts it into dest; returns the paths of its files (relative)."""
        self.update()
        with tempfile.TemporaryDirectory(dir=self.root) as tmp:
            result = subprocess.run(
                ["apt-get", "-q", *self.options(), "download", f"{package}={version}"],
                cwd=tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            debs = list(Path(tmp).glob("*.deb"))
            if result.returncode != 0 or len(debs) != 1:
                last = (result.stderr.strip().splitlines() or ["no .deb"])[-1]
                raise ArchiveError(f"apt-get download {package}={version} failed: {last}")
            listing = subprocess.run(
                ["dpkg-deb", "--fsys-tarfile", str(debs[0])], capture_output=True, check=True
            ).stdout
            subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(dest)], check=True)
        return _tar_names(listing)


def _parse_depends(output: str) -> dict[str, list[Dependency]]:
    """apt-cache depends output: each package's name at the start of a line, then its indented `Depends:`, a
    virtual one (`<name>`) followed by its providers indented further."""
    parsed: dict[str, list[Dependency]] = {}
    found: list[Dependency] = []
    current: list[str] | None = None
    for line in output.splitlines():
        if line and not line[0].isspace():
            found, current = parsed.setdefault(line.strip(), []), None
            continue
        match = re.match(r"\s+\|?Depends: (\S+)", line)
        if match:
            name = match.group(1)
            if name.startswith("<"):
                current = []
                found.append(Dependency(name.strip("<>"), ()))
            else:
                current = None
                found.append(Dependency(name, (name,)))
        elif current is not None and re.match(r"\s{4}\S", line) and found:
            last = found[-1]
            found[-1] = Dependency(last.name, (*last.providers, line.strip()))
    return parsed


def _tar_names(tar_bytes: bytes) -> list[str]:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as archive:
        return [name.removeprefix("./") for name in archive.getnames()]
