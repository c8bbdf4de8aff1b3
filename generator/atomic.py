"""Atomic writes: a file appears whole or not at all, a folder of outputs appears whole or not at all.

A file is written to a temporary file in the same folder and renamed over the target (`os.replace`
is atomic within one filesystem); on any failure the temporary file is removed. A set of files is
built in a temporary folder next to the target and moved in only once every file is complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _default_mode() -> int:
    return 0o666 & ~_umask()


def _named(exc: OSError, shown: str | Path) -> OSError:
    """The same error naming the file the user asked for, not a temporary name (errno and message kept)."""
    return type(exc)(exc.errno, exc.strerror, str(shown)) if exc.errno is not None else exc


def write_bytes(path: str | Path, data: bytes, mode: int | None = None, *, shown: str | Path | None = None) -> None:
    """Write `data` to `path` atomically; `mode` defaults to what `open()` would give a new file. An OSError (a full
    disk) names `shown` (default: `path`)."""
    path = Path(path)
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _named(exc, shown or path) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _default_mode() if mode is None else mode)
        os.replace(temporary, path)
    except BaseException as exc:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise _named(exc, shown or path) from exc
        raise


def write_text(path: str | Path, text: str, mode: int | None = None) -> None:
    write_bytes(path, text.encode("utf-8"), mode)


@contextmanager
def staged_folder(target: str | Path) -> Iterator[Path]:
    """Yields an empty temporary folder next to `target`; fill it. When the block succeeds its files
    move into `target` (the folder itself is renamed when `target` does not exist yet); when it fails
    nothing is left: neither the temporary folder nor a new `target`."""
    target = Path(target)
    parent = target.parent
    if not parent.is_dir():
        raise FileNotFoundError(f"no such folder: {parent}")
    # Inside an existing target (its files are then renamed within one filesystem, even when the target is a
    # mount point), else next to it (the folder itself is renamed).
    home = target if target.is_dir() else parent
    try:
        staging = Path(tempfile.mkdtemp(dir=home, prefix=f".{target.name}.", suffix=".tmp"))
    except OSError as exc:
        raise _named(exc, target) from exc
    try:
        try:
            yield staging
        except OSError as exc:  # name the file as it will be called, not its staging name
            name = str(exc.filename or "")
            shown = target / Path(name).relative_to(staging) if name.startswith(str(staging)) else target
            raise _named(exc, shown) from exc
        if not target.exists():
            os.chmod(staging, 0o777 & ~_umask())
            os.rename(staging, target)
            return
        if not target.is_dir():
            raise NotADirectoryError(f"{target} exists and is not a folder")
        items = sorted(staging.iterdir())
        for item in items:  # check every move can succeed before making any
            if (target / item.name).is_dir():
                raise IsADirectoryError(f"{target / item.name} is a folder: cannot write {item.name} there")
        for item in items:
            os.replace(item, target / item.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
