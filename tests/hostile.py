"""Running the real command lines against hostile input, with their peak memory measured, and on a real full disk.

`run_measured` starts the command as its own process and reads its peak RSS from the kernel (wait4), so a test
can say "refused, in bounded memory" about the very process a user runs. The command is forked from a small
spawner process, not from pytest: a process forked from pytest starts with a copy of pytest's memory, and Linux
counts that copy's high-water mark in the child's peak RSS even after exec (a worker that has run the engine
tests holds over 1 GiB). `on_full_disk` runs it inside a user and
mount namespace with a tiny tmpfs mounted over a folder: writes there fail with a real ENOSPC, nothing is mocked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TRAINER_POLICY = [sys.executable, "-m", "kubeflow_trainer_policy.cli.main"]
PROVIDER = [sys.executable, "-m", "kubeflow_trainer_policy_provider.cli"]


SPAWNER = """
import os, signal, sys
report = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(report)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(report, str(usage.ru_maxrss).encode())
os.close(report)
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
"""
"""Forks the command from a fresh interpreter (see the module's docs), waits for it, writes its peak RSS in KiB
(wait4: the command and the processes it waited for) to the file descriptor argv[1], and exits as it did."""


@dataclass(frozen=True)
class Measured:
    code: int
    stdout: str
    stderr: str
    peak_rss_mib: float
    seconds: float

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


def run_measured(
    argv: Sequence[str | Path],
    *,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    preexec: Callable[[], None] | None = None,
    stdout: int | None = subprocess.PIPE,
) -> Measured:
    """The process's exit code, output and peak RSS; it is killed (and the test fails) after `timeout` seconds."""
    started = time.monotonic()
    report_read, report_write = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", SPAWNER, str(report_write), *(str(a) for a in argv)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=PROJECT_ROOT,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec,
            pass_fds=(report_write,),
            start_new_session=True,
        )
    finally:
        os.close(report_write)
    chunks: dict[str, bytes] = {"out": b"", "err": b""}

    def drain(name: str, stream: IO[bytes] | None) -> None:
        if stream is not None:
            chunks[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, 9))
    timer.start()
    try:
        with os.fdopen(report_read, "rb") as report:
            peak_kib = report.read()
        proc.wait()
    finally:
        timer.cancel()
    for reader in readers:
        reader.join()
    elapsed = time.monotonic() - started
    if elapsed >= timeout:
        raise AssertionError(f"{argv} still running after {timeout} s (killed); stderr: {chunks['err'][-500:]!r}")
    return Measured(
        proc.returncode,
        chunks["out"].decode(errors="replace"),
        chunks["err"].decode(errors="replace"),
        int(peak_kib or 0) / 1024,
        elapsed,
    )


def assert_refused(result: Measured, *fragments: str, max_rss_mib: float = 250) -> None:
    """Exit 2, one line on stderr naming what is wrong, no traceback, memory bounded."""
    assert result.code == 2, result
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr_lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)
    assert result.peak_rss_mib < max_rss_mib, f"peak RSS {result.peak_rss_mib:.0f} MiB: {result}"


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """`width` aliases of `width`, `levels` deep: a few hundred bytes that expand to width**levels nodes."""
    lines = ["apiVersion: trainer.kubeflow.org/v1alpha1", "kind: TrainJob", "metadata: {name: bomb, namespace: a}"]
    lines.append("a0: &a0 [" + ", ".join(["x"] * width) + "]")
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def close_fd(fd: int) -> Callable[[], None]:
    return lambda: os.close(fd)


UNSHARE = shutil.which("unshare")


def on_full_disk(argv: Sequence[str | Path], folder: Path, size_kib: int, *, timeout: float = 120) -> Measured:
    """Run `argv` with a `size_kib` tmpfs mounted over `folder` (a real filesystem that fills up), the files already
    in `folder` copied onto it first and copied back after, so a test sees what the command left behind."""
    if UNSHARE is None:
        raise AssertionError("util-linux `unshare` is needed to mount a small tmpfs without privileges")
    stash = folder.with_name(folder.name + ".before")
    if stash.exists():
        shutil.rmtree(stash)
    shutil.copytree(folder, stash) if folder.exists() else stash.mkdir(parents=True)
    folder.mkdir(parents=True, exist_ok=True)
    after = folder.with_name(folder.name + ".after")
    if after.exists():
        shutil.rmtree(after)
    after.mkdir()
    command = " ".join(_quote(str(a)) for a in argv)
    script = (
        f"mount -t tmpfs -o size={size_kib}k tmpfs {_quote(str(folder))} || exit 97\n"
        f"cp -a {_quote(str(stash))}/. {_quote(str(folder))}/ || exit 98\n"
        f"{command}\nstatus=$?\ncp -a {_quote(str(folder))}/. {_quote(str(after))}/\nexit $status\n"
    )
    result = run_measured([UNSHARE, "--user", "--map-root-user", "--mount", "sh", "-c", script], timeout=timeout)
    if result.code in (97, 98):
        raise AssertionError(f"could not set up the small filesystem: {result.stderr}")
    shutil.rmtree(folder)
    after.rename(folder)
    shutil.rmtree(stash)
    return result


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
