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
import shlex
import subprocess
import sys

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


def run(args: argparse.Namespace) -> int:
    command = pip_command()
    if not ENGINE_REQUIREMENTS.is_file():
        raise InputError(str(ENGINE_REQUIREMENTS), "the pinned engine requirements are missing from this install")
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
    return EXIT_OK
