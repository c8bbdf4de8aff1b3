"""`trainer-policy install-engine`: the embedded OPA engine, hash-pinned, into the Python that runs this command.

opa-golib-python-bindings declares Python >= 3.14 but works from 3.11, so a plain `pip install` of it fails
below 3.14: pip must be told to ignore that declaration, without resolving dependencies (it has none), and
only for the pinned, hashed wheels shipped in this package (kubeflow_trainer_policy/requirements/).
It runs `python -m pip` of the interpreter running this command: a venv's or a pipx venv's (pipx venvs reach
pipx's shared pip).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

from kubeflow_trainer_policy.errors import EXIT_OK, InputError
from kubeflow_trainer_policy.paths import ENGINE_REQUIREMENTS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "install-engine",
        help="install the embedded OPA engine (hash-pinned opa-golib-python-bindings) for this Python",
        description=(
            "Install the embedded OPA engine that review, test, bundle and podsets need: "
            "`python -m pip install --no-deps --ignore-requires-python --require-hashes -r <the pinned file shipped "
            "with this package>`, run with the interpreter of this command (Python 3.11 to 3.14; the engine's wheel "
            "declares >= 3.14 but works from 3.11)."
        ),
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the pip command instead of running it (default: run it)",
    )
    parser.set_defaults(run=run)


def pip_command() -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--ignore-requires-python",
        "--require-hashes",
        "-r",
        str(ENGINE_REQUIREMENTS),
    ]


PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[^\s=]+\s+(--hash=sha256:[0-9a-f]{64}\s*)+$")
"""One requirement as pip's hash-checking mode wants it: `name==version --hash=sha256:<hex> ...`."""


def pinned_requirements(path: Path) -> list[str]:
    """The requirements of the pinned file (continuations joined, comments dropped), each pinned and hashed.
    pip installs nothing from a file without requirements and still exits 0, so one is required here."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "the pinned engine requirements are missing from this install") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"the pinned engine requirements cannot be read: {exc}") from None
    lines = [re.sub(r"(^|\s)#.*$", "", line).strip() for line in text.replace("\\\n", " ").splitlines()]
    requirements = [line for line in lines if line]
    if not requirements:
        raise InputError(
            str(path),
            "has no requirement (empty or only comments), so nothing would be installed: reinstall this package",
        )
    for number, requirement in enumerate(requirements, 1):
        if not PINNED.match(requirement):
            raise InputError(
                str(path),
                f"requirement {number} is not pinned and hashed (want name==version --hash=sha256:...): "
                f"{requirement[:80]!r}",
            )
    return requirements


def run(args: argparse.Namespace) -> int:
    command = pip_command()
    pinned_requirements(ENGINE_REQUIREMENTS)
    if args.dry_run:
        print(shlex.join(command))
        return EXIT_OK
    if importlib.util.find_spec("pip") is None:
        raise InputError(
            sys.executable,
            "has no pip (an environment made by uv?): install the engine with your tool, pinned and hashed as in "
            f"{ENGINE_REQUIREMENTS}, ignoring its Requires-Python",
        )
    print(f"running: {shlex.join(command)}", file=sys.stderr, flush=True)
    completed = subprocess.run(command, check=False)
    if completed.returncode != 0:
        raise InputError("install-engine", f"pip exited with {completed.returncode} (its output is above)")
    # pip's 0 is not proof: the engine must now import in a fresh interpreter (this one cached the old state).
    check = subprocess.run([sys.executable, "-c", "import opa_bindings"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        last = (check.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError("install-engine", f"pip exited 0 but the engine still cannot be imported: {last}")
    return EXIT_OK
