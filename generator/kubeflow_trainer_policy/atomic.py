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


def write_bytes(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `path` atomically; `mode` defaults to what `open()` would give a new file."""
    path = Path(path)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _default_mode() if mode is None else mode)
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
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
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        yield staging
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
