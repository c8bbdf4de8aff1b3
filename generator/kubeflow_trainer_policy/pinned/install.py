"""`go install` of each pinned tool (tools/versions.json) into the project's cache, once: one GOBIN per tool and
version, ~/.cache/kubeflow-trainer-policy/tools/<tool>/<version>/<tool> (or under $KTP_CACHE_DIR).

Go verifies every module it downloads against the checksum database (the machine's own GOPROXY, GOSUMDB and
GOFLAGS are left as they are). A tool whose module the checksum database does not answer for carries its go.sum
lines in tools/versions.json: it is installed from a throwaway module that requires it, so Go checks it against
those lines instead. A module whose go.mod asks for a newer Go than the machine's is installed again with
GOTOOLCHAIN naming that Go (which Go fetches from the proxy)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubeflow_trainer_policy.gotools.builder import locked, project_cache_dir
from kubeflow_trainer_policy.paths import PROJECT_ROOT
from kubeflow_trainer_policy.pinned.versions import Tool

NEEDS_GO = re.compile(r"requires go >= (1\.\d+(?:\.\d+)?)")
NO_VERSION_LIST = "loading deprecation"


class InstallError(Exception):
    """One line: which module at which version could not be installed, and Go's reason."""


def cache_root() -> Path:
    return project_cache_dir() / "tools"


def binary_path(tool: Tool, root: Path | None = None) -> Path:
    return (root or cache_root()) / tool.name / tool.version / tool.name


def log(message: str) -> None:
    print(f"[tools] {message}", file=sys.stderr, flush=True)


def _reason(output: str) -> str:
    """Go's last error line, which names what failed (a 403 from the proxy, a checksum mismatch...)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "go:" in line or "error" in line.lower() or "verifying" in line]
    return (errors or lines or ["no output"])[-1]


def _go_version() -> str:
    result = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=False)
    version = result.stdout.strip().removeprefix("go")
    return version or "1.22"


def _go_install(
    tool: Tool, gobin: Path, toolchain: str | None, through_module: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GOBIN": str(gobin), "GOWORK": "off"}
    if toolchain is not None:
        env["GOTOOLCHAIN"] = toolchain
    if tool.module_dir is not None:
        # The project's own module pins every requirement (go.mod and go.sum are in the repository): Go builds
        # from them, read-only, and verifies every download against that go.sum.
        return subprocess.run(
            ["go", "install", "-mod=readonly", tool.package],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            cwd=PROJECT_ROOT / tool.module_dir,
        )
    if not tool.go_sum and not through_module:
        return subprocess.run(
            ["go", "install", tool.spec], env=env, capture_output=True, text=True, check=False, cwd=gobin
        )
    # A module that requires the tool's, with the pinned go.sum lines (if any): Go checks the tool's module against
    # them, and builds the tool's own requirements (the tool's go.mod lists them all and has no replace directive,
    # so the build list is the one `go install pkg@v` uses). With pinned lines, the tool's own go.sum (inside the
    # module those lines verify) vouches for its dependencies, which the checksum database may not know either;
    # any module it does not list is checked against the checksum database.
    with tempfile.TemporaryDirectory(prefix="ktp-tools-") as tmp:
        work = Path(tmp)
        (work / "go.mod").write_text(
            f"module ktp.invalid/tools\n\ngo {_go_version()}\n\nrequire {tool.module} {tool.version}\n"
        )
        (work / "go.sum").write_text("".join(f"{line}\n" for line in tool.go_sum))
        if tool.go_sum:
            download = subprocess.run(
                ["go", "mod", "download", "-json", tool.module], env=env, capture_output=True, text=True, cwd=work
            )
            if download.returncode != 0:
                return download
            own = Path(json.loads(download.stdout)["Dir"]) / "go.sum"
            if own.is_file():
                with (work / "go.sum").open("a") as sums:
                    sums.write(own.read_text())
        return subprocess.run(
            ["go", "install", "-mod=mod", tool.package], env=env, capture_output=True, text=True, check=False, cwd=work
        )


def install(tool: Tool, root: Path | None = None) -> Path:
    """The tool's binary, `go install`ed into its own folder first if it is not there."""
    binary = binary_path(tool, root)
    if os.access(binary, os.X_OK):
        return binary
    with locked(binary.parent.with_name(f"{tool.version}.lock")):
        if os.access(binary, os.X_OK):
            return binary
        staging = binary.parent.with_name(f"{tool.version}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        log(f"{tool.label}: go install {tool.spec} (once; several minutes on 2 cores)")
        started = time.monotonic()
        result = _go_install(tool, staging, None)
        toolchain = None
        needs = NEEDS_GO.search(result.stderr)
        if result.returncode != 0 and needs is not None:
            toolchain = f"go{needs.group(1)}"
            log(f"{tool.label}: needs Go >= {needs.group(1)}: again with GOTOOLCHAIN={toolchain}")
            result = _go_install(tool, staging, toolchain)
        if result.returncode != 0 and NO_VERSION_LIST in result.stderr:
            # `go install pkg@v` reads the module's version list for its deprecation notice; a proxy that serves
            # the version but not the list fails it. A module requiring the tool's builds the same list of modules.
            log(f"{tool.label}: the proxy serves no version list of {tool.module}: through a module that requires it")
            result = _go_install(tool, staging, toolchain, through_module=True)
        built = staging / tool.name
        if result.returncode != 0 or not built.is_file():
            shutil.rmtree(staging, ignore_errors=True)
            reason = _reason(result.stderr + result.stdout) if result.returncode != 0 else f"no {tool.name} built"
            raise InstallError(f"cannot install {tool.spec} from the Go module proxy: {reason}")
        shutil.rmtree(binary.parent, ignore_errors=True)
        staging.rename(binary.parent)
        log(f"{tool.label}: installed {binary} in {time.monotonic() - started:.0f} s")
    return binary
