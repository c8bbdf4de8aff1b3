"""Reading and writing bundle tarballs, byte-for-byte reproducible."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from kubeflow_trainer_policy.atomic import write_bytes
from kubeflow_trainer_policy.errors import InputError

MAX_FILE_BYTES = 16 * 1024 * 1024


def write_archive(path: Path, files: dict[str, bytes]) -> None:
    """Sorted entries, fixed owner, mode and times; the file appears whole or not at all."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo("/" + name)
            info.size, info.mode, info.mtime, info.uid, info.gid = len(files[name]), 0o644, 0, 0, 0
            tar.addfile(info, io.BytesIO(files[name]))
    compressed = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, compressed)  # a temporary file in the same folder, renamed; removed on failure


def read_archive(path: Path) -> dict[str, bytes]:
    """{name without leading slash: content}; rejects links, escapes and duplicates."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            _read_members(path, tar, files)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise InputError(str(path), f"not a gzipped tar bundle: {exc}") from exc
    return files


def _read_members(path: Path, tar: tarfile.TarFile, files: dict[str, bytes]) -> None:
    for member in tar.getmembers():
        if member.isdir():
            continue
        name = member.name.lstrip("/")
        if not member.isfile() or ".." in name.split("/"):
            raise InputError(str(path), f"entry {member.name!r} is not a plain file inside the bundle")
        if member.size > MAX_FILE_BYTES:
            raise InputError(str(path), f"entry {name!r} is larger than {MAX_FILE_BYTES} bytes")
        if name in files:
            raise InputError(str(path), f"entry {name!r} appears twice")
        extracted = tar.extractfile(member)
        files[name] = extracted.read() if extracted else b""
