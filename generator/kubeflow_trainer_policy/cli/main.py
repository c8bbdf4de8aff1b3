"""`trainer-policy`: one module per subcommand, each with `register(subparsers)` and `run(args)`.

Only the chosen subcommand's module is imported (the others get a stub parser for `--help`), so
`review` never pays for bundle, generate or certs imports.

Exit codes never lie: 0 success/allowed, 1 ONLY for a real denial (review) or a real verification
or test failure (bundle verify, test, generate --check), 2 for everything else. `main()` is the one
error boundary: input errors print one line naming the file and field; any other exception prints a
one-line reason (a traceback only with `--debug`).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from contextlib import suppress
from types import ModuleType
from typing import Any, TextIO

from kubeflow_trainer_policy.errors import EXIT_ERROR, EngineError, InputError
from kubeflow_trainer_policy_provider import reader
from kubeflow_trainer_policy_provider.reader import add_limit_arguments

COMMANDS: dict[str, tuple[str, str]] = {
    "generate": (
        "kubeflow_trainer_policy.cli.generate_command",
        "render the Rego, Gatekeeper bundles and docs from the rule catalog",
    ),
    "review": ("kubeflow_trainer_policy.cli.review_command", "evaluate one admission request the way Gatekeeper would"),
    "test": ("kubeflow_trainer_policy.cli.test_command", "run the Rego unit tests and gator suites on the engine"),
    "bundle": (
        "kubeflow_trainer_policy.cli.bundle_command",
        "build, sign, verify, serve and publish OPA bundles of the policies",
    ),
    "provider": (
        "kubeflow_trainer_policy.cli.provider_command",
        "run the external data provider (JobSet state for Gatekeeper)",
    ),
    "certs": (
        "kubeflow_trainer_policy.cli.certs_command",
        "make the provider's CA, serving certificate and the Provider caBundle",
    ),
    "podsets": (
        "kubeflow_trainer_policy.cli.podsets_command",
        "print the PodSets and total requests of a TrainJob, computed the Trainer's way",
    ),
    "install-engine": (
        "kubeflow_trainer_policy.cli.install_engine_command",
        "install the embedded OPA engine (hash-pinned opa-golib-python-bindings) for this Python",
    ),
}
"""name -> (module, one-line help shown by `trainer-policy --help`)."""


def command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name][0])


def selected_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is one), if any."""
    takes_value = False
    for word in argv:
        if takes_value:
            takes_value = False
        elif word in COMMANDS:
            return word
        elif word.startswith("--max-") and "=" not in word:
            takes_value = True  # a read limit given before the command: its value follows
        elif not word.startswith("-"):
            return None
    return None


def build_parser(only: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The full parser; with `lazy`, every subcommand but `only` is a stub (its module is not imported)."""
    parser = argparse.ArgumentParser(
        prog="trainer-policy",
        description="Kubeflow Trainer admission policies for OPA Gatekeeper: generate, test, review, bundle.",
        epilog="Exit codes: 0 success or allowed; 1 denied (review) or a check failed (test, bundle verify, "
        "generate --check); 2 any input or internal error, with one line on stderr.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="print a traceback for internal errors (default: one line only)"
    )
    parser.add_argument("--version", action=_VersionAction, help="print the installed version and exit (default: off)")
    add_limit_arguments(parser)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        if not lazy or name == only:
            command_module(name).register(subparsers)
            # The limits also after the command (`review x --max-depth 64`), without hiding a value given before it.
            add_limit_arguments(subparsers.choices[name], default=argparse.SUPPRESS)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


class _VersionAction(argparse.Action):
    """Like argparse's "version" action, but reads the installed distribution's version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("kubeflow-trainer-policy")
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "unknown (not installed)"
        print(f"trainer-policy {found}")
        parser.exit()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _report(prog: str, message: str) -> None:
    with suppress(OSError, ValueError):  # stderr itself is gone: nothing left to tell
        print(f"{prog}: {_one_line(message)}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


STDOUT_NAME = "<stdout>"


class StdoutError(OSError):
    """Writing the command's output failed (a full disk, a closed pipe): the output, not an input, is named."""


class _NamedStdout:
    """sys.stdout whose write errors become StdoutError, so they are told apart from the command's own files."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror, STDOUT_NAME) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror, STDOUT_NAME) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _describe(exc: Exception) -> str:
    if isinstance(exc, OSError):  # a file or socket the command needed: name it
        target = f"{exc.filename} -> {exc.filename2}" if exc.filename2 else exc.filename
        return f"{target}: {exc.strerror or exc}" if target else f"{type(exc).__name__}: {exc}"
    if isinstance(exc, RecursionError):
        return "input nested too deeply to process"
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"internal error: {type(exc).__name__}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with file descriptor 1 closed: nothing could tell the result
        _report("trainer-policy", f"{STDOUT_NAME}: standard output is closed")
        return EXIT_ERROR
    stdout = sys.stdout
    sys.stdout = _NamedStdout(stdout)  # type: ignore[assignment]
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


def _main(argv: list[str]) -> int:
    parser = build_parser(selected_command(argv), lazy=True)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help exits 0, a usage error exits 2
        return 0 if exc.code in (0, None) else EXIT_ERROR
    prog = f"trainer-policy {args.command}"
    for warning in reader.unknown_variables():
        print(f"{prog}: {warning}", file=sys.stderr)
    try:
        reader.configure(reader.limits_from_args(args))
        status = int(args.run(args))
        sys.stdout.flush()
        return status
    except (InputError, EngineError) as exc:
        _report(prog, str(exc))
    except KeyboardInterrupt:
        return 130
    except StdoutError as exc:
        _silence_stdout()
        if exc.errno == errno.EPIPE:
            _report(prog, "stdout was closed before all output was written")
        else:
            _report(prog, f"{STDOUT_NAME}: {exc.strerror}: the output was not written whole")
    except Exception as exc:  # anything else: one line (a traceback only with --debug), never exit 1
        if args.debug:
            traceback.print_exc()
        _report(prog, _describe(exc) + ("" if args.debug else " (`trainer-policy --debug ...` shows a traceback)"))
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
