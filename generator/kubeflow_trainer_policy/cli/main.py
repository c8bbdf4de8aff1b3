"""`trainer-policy`: one module per subcommand, each with `register(subparsers)` and `run(args)`.

Only the chosen subcommand's module is imported (the others get a stub parser for `--help`), so
`review` never pays for bundle, generate or certs imports.

Exit codes never lie: 0 success/allowed, 1 ONLY for a real denial (review) or a real verification
or test failure (bundle verify, test, generate --check), 2 for everything else. `main()` is the one
error boundary: input errors print one line naming the file and field; any other exception prints a
one-line reason (a traceback only with `--debug`). Ctrl-C exits 130 with one line, also in the middle of an
evaluation by the embedded (Go) engine (see InterruptGuard).
"""

from __future__ import annotations

import _thread
import argparse
import errno
import importlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from contextlib import suppress
from types import CodeType, FrameType, ModuleType
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
    from kubeflow_trainer_policy.cli.reports import visible  # only when there is an error to tell

    with suppress(OSError, ValueError):  # stderr itself is gone: nothing left to tell
        # A file or field name may hold terminal escapes or bytes that are not UTF-8: written as escapes.
        print(f"{prog}: {visible(_one_line(message))}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


STDOUT_NAME = "<stdout>"
EXIT_INTERRUPTED = 130
"""128 + SIGINT, what shells report for a command stopped by Ctrl-C."""


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


# Ctrl-C that never lands inside a call from the embedded OPA engine (Go) back into Python.
#
# The engine (opa-golib-python-bindings) evaluates in Go and calls Python for custom builtins (the review's
# text, lenient builtins, external data) through a ctypes callback. Python's default SIGINT handler raises
# KeyboardInterrupt in whatever Python code runs next; inside such a callback the exception escapes the
# binding's `except Exception`, ctypes hands Go a garbage pointer, and Go dies with SIGSEGV -> SIGABRT and a
# goroutine dump (or, depending on where it lands, the interrupt is swallowed and the review goes on).
#
# So the handler here raises KeyboardInterrupt only outside those callbacks. Inside one it only notes the
# interrupt and sets a profile hook on the main thread; the first Python event outside every callback (Go has
# returned to the caller) re-raises SIGINT through `_thread.interrupt_main`, and the handler then raises
# KeyboardInterrupt there, where unwinding is safe. Go runs on until its current call returns, then the command
# unwinds normally (`finally` blocks, temporary files) and `main()` exits 130 with one line.

CALLBACK_MODULE = "opa_bindings.engine"
"""Where the Go -> Python entry point lives; until that module is imported, no Go code can call back."""


def _callback_codes() -> tuple[CodeType, ...]:
    module = sys.modules.get(CALLBACK_MODULE)
    engine = getattr(module, "OpaEngine", None)
    dispatch = getattr(engine, "_dispatch", None)
    code = getattr(dispatch, "__code__", None)
    return (code,) if isinstance(code, CodeType) else ()


def engine_caller(frame: FrameType | None) -> FrameType | None:
    """The frame that called into Go, when `frame` runs inside a call from Go back into Python (the frame above
    the outermost entry of the binding on the stack); None outside every such call."""
    codes = _callback_codes()
    caller = None
    while codes and frame is not None:
        if frame.f_code in codes:
            caller = frame.f_back
        frame = frame.f_back
    return caller


class InterruptGuard:
    """The SIGINT handler. After it raised once, further SIGINTs are ignored: the command is already unwinding."""

    def __init__(self) -> None:
        self.raised = False
        self._caller: FrameType | None = None
        """While an interrupt waits: the frame that called into Go, where it is delivered."""
        self._codes: tuple[CodeType, ...] = ()

    def install(self) -> None:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when SIGINT is ignored (nohup, &)
            signal.signal(signal.SIGINT, self.handle)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.raised:
            return
        caller = engine_caller(frame)
        if caller is not None:
            self._caller, self._codes = caller, _callback_codes()
            sys.setprofile(self._watch)
            return
        self.raised = True
        raise KeyboardInterrupt

    def _watch(self, frame: FrameType, event: str, arg: Any) -> None:
        """Profile hook while an interrupt waits. Go has returned once Python runs in the frame that called it, or
        in a function that frame calls (a new callback from Go is also called "from" that frame: not that one).
        Kept to two comparisons: it runs on every call and return of every callback until then."""
        caller = self._caller
        if frame is caller or (frame.f_back is caller and frame.f_code not in self._codes):
            self._caller = None
            sys.setprofile(None)
            _thread.interrupt_main(signal.SIGINT)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with file descriptor 1 closed: nothing could tell the result
        _report("trainer-policy", f"{STDOUT_NAME}: standard output is closed")
        return EXIT_ERROR
    stdout = sys.stdout
    sys.stdout = _NamedStdout(stdout)  # type: ignore[assignment]
    # Ctrl-C must not land inside a call from the Go engine into Python (InterruptGuard); signal handlers can
    # only be set from the main thread (main() called from another thread keeps Python's default).
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if previous is not None:
        InterruptGuard().install()
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before or after the command ran (parsing the command line, flushing)
        _report("trainer-policy", "interrupted")
        return EXIT_INTERRUPTED
    finally:
        sys.stdout = stdout
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


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
        _report(prog, "interrupted")
        return EXIT_INTERRUPTED
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
