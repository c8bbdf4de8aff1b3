"""Atomic writes: a file appears whole or not at all, a folder of outputs appears whole or not at all.

A file is written to a temporary file in the same folder and renamed over the target (`os.replace`
is atomic within one filesystem); on any failure the temporary file is removed. A set of files is
built in a temporary folder next to the target and moved in only once every file is complete.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
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


DATA_LINK = "..data"
"""The link that names the current set of files (Kubernetes' AtomicWriter convention for Secret volumes)."""
SET_PREFIX = "..set-"


def publish_set(folder: str | Path, files: dict[str, tuple[bytes, int]]) -> None:
    """Make `files` ({name: (content, mode)}) the set of files of `folder`, all at once.

    Each name in the folder is a symlink `name -> ..data/name`, and `..data` a symlink to a hidden folder holding
    one complete set: the new set is written whole into a new hidden folder, then `..data` is switched to it by one
    rename. At every instant each name shows the old set or the new one, never a mix (a kill, a full disk). Names
    of the old set that the new one does not write are carried into it unchanged (nothing is deleted that was not
    replaced); files of the folder outside the set are left alone. A name that is still a regular file (a folder
    written before sets) is first turned into a link to an identical copy, so that step, too, never shows anything
    but the old content."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        if (folder / name).is_dir() and not (folder / name).is_symlink():
            raise IsADirectoryError(errno.EISDIR, "is a folder: cannot write a file there", str(folder / name))
    current = folder / DATA_LINK
    carried = {
        entry.name: (entry.read_bytes(), entry.stat().st_mode & 0o777)
        for entry in folder.iterdir()
        if entry.name not in files and entry.is_symlink() and os.readlink(entry) == f"{DATA_LINK}/{entry.name}"
        if entry.exists()
    }
    files = {**carried, **files}
    new_set = _write_set(folder, files)
    try:
        _link_names(folder, files.keys())
        _replace_link(current, new_set.name)
    except BaseException:
        shutil.rmtree(new_set, ignore_errors=True)
        raise
    _fsync_dir(folder)
    _remove_stale(folder, new_set.name, files.keys())


def _write_set(folder: Path, files: dict[str, tuple[bytes, int]]) -> Path:
    try:
        version = Path(tempfile.mkdtemp(dir=folder, prefix=SET_PREFIX))
    except OSError as exc:
        raise _named(exc, folder) from exc
    try:
        for name, (content, mode) in files.items():
            path = version / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(path, mode)
        os.chmod(version, 0o755)
        _fsync_dir(version)
    except BaseException as exc:
        shutil.rmtree(version, ignore_errors=True)
        if isinstance(exc, OSError):
            name = Path(str(exc.filename or "")).name
            raise _named(exc, folder / name if name in files else folder) from exc
        raise
    return version


def _link_names(folder: Path, names: Iterable[str]) -> None:
    """Every name a link into `..data`; a regular file first moves (as an identical hard link) into the set the
    current `..data` names, so the name shows the same bytes before and after it becomes a link."""
    current = folder / DATA_LINK
    regular = [n for n in names if (folder / n).exists() and not (folder / n).is_symlink()]
    if regular:
        if current.is_symlink():
            old_set = folder / os.readlink(current)
        else:
            old_set = Path(tempfile.mkdtemp(dir=folder, prefix=SET_PREFIX))
            os.chmod(old_set, 0o755)
        for name in regular:
            if not (old_set / name).exists():
                os.link(folder / name, old_set / name)
        _fsync_dir(old_set)
        if not current.is_symlink():
            _replace_link(current, old_set.name)
    for name in names:
        link = folder / name
        if not link.is_symlink() or os.readlink(link) != f"{DATA_LINK}/{name}":
            _replace_link(link, f"{DATA_LINK}/{name}")  # a new name dangles until ..data switches: absent till then


def _replace_link(link: Path, target: str) -> None:
    temporary = link.with_name(f".{link.name}.{os.getpid()}.link")
    with suppress(FileNotFoundError):
        os.unlink(temporary)
    os.symlink(target, temporary)
    try:
        os.replace(temporary, link)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _remove_stale(folder: Path, keep: str, names: Iterable[str]) -> None:
    """Old sets, and links into `..data` that lead nowhere (left by an earlier run that was killed)."""
    wanted = set(names)
    for entry in folder.iterdir():
        if entry.name.startswith(SET_PREFIX) and entry.name != keep and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.is_symlink() and entry.name not in wanted and not entry.exists() and _into_data(entry):
            entry.unlink()


def _into_data(link: Path) -> bool:
    return os.readlink(link) == f"{DATA_LINK}/{link.name}"


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
