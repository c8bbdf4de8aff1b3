"""Build (once per Trainer tag, cached) the oracle command tools/trainer-oracle: the shared source in
tools/trainer-oracle/oracle plus the tag's own go.mod, go.sum and compat.go, compiled against
github.com/kubeflow/trainer/v2 at that tag, fetched through the Go module proxy (`go env GOPROXY`).

The binary lands in ~/.cache/kubeflow-trainer-policy/trainer-oracle/bin/trainer-oracle-<tag>-<source digest> (or
under $KTP_CACHE_DIR) and is reused until the source or pins change. `python -m
kubeflow_trainer_policy.oracle.build [TAG...]` builds the tags (default: every profile's) and prints
`<tag>=<path>` each.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kubeflow_trainer_policy.gotools.builder import GoTool, ToolchainError, cache_dir, locked
from kubeflow_trainer_policy.paths import PROJECT_ROOT

SOURCE = PROJECT_ROOT / "tools" / "trainer-oracle"
SHARED = SOURCE / "oracle"
TOOL = GoTool(
    name="trainer-oracle",
    title="Trainer oracle",
    source=SOURCE,
    env="TRAINER_POLICY_ORACLE_DIR",
    main="trainer",
    override_hint="check that the Go module proxy (go env GOPROXY) is reachable",
)
TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
RELEASE_OF_PROFILE = {"v2.0": "v2.0.1", "v2.1": "v2.1.0", "v2.2": "v2.2.1", "v2.3": "v2.3.0"}
"""The Trainer tag whose webhooks judge each profile: the newest patch release of its minor."""
MODULE_VERSION = re.compile(r"([A-Za-z0-9][\w.\-]*(?:/[\w.\-~]+)+)@(v[0-9][\w.\-+]*)")
PROXY_FAILURE = re.compile(
    r"reading https?://|404 Not Found|410 Gone|dial tcp|no such host|TLS handshake|connection refused|"
    r"i/o timeout|unknown revision|invalid version|verifying module|checksum mismatch|not found"
)


class OracleBuildError(ToolchainError):
    """The oracle of a tag cannot be built: one line naming what failed."""


def tag_files(tag: str) -> list[Path]:
    folder = SOURCE / tag
    if not (folder / "go.mod").is_file():
        raise OracleBuildError(f"no oracle module for Trainer {tag}: {folder / 'go.mod'} is missing")
    return [*sorted(SHARED.glob("*.go")), folder / "go.mod", folder / "go.sum", folder / "compat.go"]


def source_key(tag: str) -> str:
    digest = hashlib.sha256()
    for path in tag_files(tag):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def binary_path(tag: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir(TOOL)) / "bin" / f"trainer-oracle-{tag}-{source_key(tag)}"


def _works(binary: Path, tag: str) -> bool:
    if not binary.is_file():
        return False
    try:
        done = subprocess.run([str(binary), "version"], capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == tag


def ensure_built(tag: str, cache: Path | None = None) -> Path:
    """The cached oracle of `tag`, built first when there is none (its `version` must print the tag)."""
    cache = cache or cache_dir(TOOL)
    binary = binary_path(tag, cache)
    if _works(binary, tag):
        return binary
    with locked(cache / f".lock-{tag}"):  # one build per tag across processes (worktrees share the cache)
        if _works(binary, tag):
            return binary
        _build(tag, cache, binary)
    return binary


def _log(message: str) -> None:
    print(f"trainer-oracle: {message}", file=sys.stderr, flush=True)


def _build(tag: str, cache: Path, binary: Path) -> None:
    if shutil.which("go") is None:
        raise OracleBuildError("no `go` command on PATH: the oracle is built with the Go toolchain (go >= 1.24)")
    work = cache / "build" / tag
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for path in tag_files(tag):
        shutil.copyfile(path, work / path.name)
    env = dict(os.environ)
    # A tag whose go.mod asks for a newer Go than the local one gets it from the proxy (GOTOOLCHAIN=auto).
    env.setdefault("GOTOOLCHAIN", "auto")
    env["GOFLAGS"] = "-mod=readonly -buildvcs=false"
    _log(f"building the webhooks of {TRAINER_MODULE}@{tag} from the Go module proxy (once per tag; heavy) ...")
    _copy_crds(tag, work, env)
    started = time.monotonic()
    tmp = binary.with_name(binary.name + ".tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    command = ["go", "build", "-v", "-o", str(tmp), "."]
    process = subprocess.Popen(command, cwd=work, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines: list[str] = []
    compiled = 0
    for line in process.stderr:
        line = line.rstrip("\n")
        lines.append(line)
        if line.startswith("go: downloading "):
            _log(line.removeprefix("go: "))
        elif not line.startswith(("go: ", "#", " ")) and "/" in line and " " not in line:
            compiled += 1  # `go build -v` names each package as it compiles it
            if compiled % 100 == 0:
                _log(f"{tag}: {compiled} packages compiled ({time.monotonic() - started:.0f}s)")
    if process.wait() != 0:
        tmp.unlink(missing_ok=True)
        raise OracleBuildError(_failure(tag, lines))
    tmp.replace(binary)
    _log(f"{tag}: built {binary} ({compiled} packages, {time.monotonic() - started:.0f}s)")


def _copy_crds(tag: str, work: Path, env: dict[str, str]) -> None:
    """The tag's CRDs (manifests/base/crds of the module, as the proxy serves it) next to the source: crd.go
    embeds them."""
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{TRAINER_MODULE}@{tag}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        folder = Path(json.loads(done.stdout)["Dir"]) / "manifests" / "base" / "crds"
    except (ValueError, KeyError):
        raise OracleBuildError(_failure(tag, (done.stdout + done.stderr).splitlines())) from None
    crds = sorted(folder.glob("trainer.kubeflow.org_*.yaml"))
    if not crds:
        raise OracleBuildError(f"{TRAINER_MODULE}@{tag} has no CRDs in {folder}")
    (work / "crds").mkdir()
    for crd in crds:
        shutil.copyfile(crd, work / "crds" / crd.name)


def _failure(tag: str, lines: list[str]) -> str:
    """One line: the module@version the proxy could not serve, else the compiler's first error."""
    for line in lines:
        found = MODULE_VERSION.search(line)
        if found and PROXY_FAILURE.search(line):
            return (
                f"the Go module proxy cannot serve {found.group(1)}@{found.group(2)} (needed by the oracle of "
                f"Trainer {tag}): {line.strip()}"
            )
    errors = [line for line in lines if line.strip() and not line.startswith("go: downloading")]
    tail = errors[-1].strip() if errors else "no output"
    return f"cannot build the oracle of Trainer {tag}: {tail}"


def main(argv: list[str] | None = None) -> int:
    tags = (argv if argv is not None else sys.argv[1:]) or list(RELEASE_OF_PROFILE.values())
    status = 0
    for tag in tags:
        try:
            print(f"{tag}={ensure_built(tag)}")
        except ToolchainError as exc:
            print(f"trainer-oracle: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
