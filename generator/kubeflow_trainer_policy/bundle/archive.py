"""Reading and writing bundle tarballs, byte-for-byte reproducible, read within limits.

A bundle is read entry by entry from its gzip stream (never all headers first), and refused as soon as it holds
more entries, a larger entry, or more bytes in all than the limits allow: a 10 MB gzip that inflates to gigabytes
costs at most the limits.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO

from kubeflow_trainer_policy.atomic import write_bytes
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider.reader import positive_int

MIB = 1024 * 1024
ENV_PREFIX = "TRAINER_POLICY_BUNDLE_"


@dataclass(frozen=True)
class ArchiveLimits:
    """Bounds on reading one bundle; flags `--max-<name>` (dashes) and variables `TRAINER_POLICY_BUNDLE_MAX_<NAME>`
    (`--max-entries` and TRAINER_POLICY_BUNDLE_MAX_ENTRIES)."""

    max_entries: int = 10_000
    max_entry_bytes: int = 16 * MIB
    max_total_bytes: int = 128 * MIB
    """Bytes of all entries together, uncompressed."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ArchiveLimits:
        values = {}
        for item in fields(cls):
            name = ENV_PREFIX + item.name.upper()
            if name in environ:
                values[item.name] = positive_int(environ[name], name)
        return cls(**values)

    def describe(self, name: str) -> str:
        return f"--{name.replace('_', '-')} or {ENV_PREFIX}{name.upper()}"


HELP = {
    "max_entries": "entries in one bundle",
    "max_entry_bytes": "bytes of one entry, uncompressed",
    "max_total_bytes": "bytes of all entries of one bundle, uncompressed",
}


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = ArchiveLimits()
    group = parser.add_argument_group(f"bundle limits (also set by the environment: {ENV_PREFIX}MAX_<NAME>)")
    for item in fields(ArchiveLimits):
        group.add_argument(
            f"--{item.name.replace('_', '-')}",
            metavar="N",
            help=f"{HELP[item.name]} (default {getattr(defaults, item.name)})",
        )


def limits_from_args(args: argparse.Namespace) -> ArchiveLimits:
    values = {}
    for item in fields(ArchiveLimits):
        value = getattr(args, item.name, None)
        if value is not None:
            values[item.name] = positive_int(str(value), f"--{item.name.replace('_', '-')}")
    return replace(ArchiveLimits.from_env(), **values)


def write_archive(path: Path, files: dict[str, bytes]) -> None:
    """Sorted entries, fixed owner, mode and times; the file appears whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, archive_bytes(files))  # a temporary file in the same folder, renamed; removed on failure


def archive_bytes(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo("/" + name)
            info.size, info.mode, info.mtime, info.uid, info.gid = len(files[name]), 0o644, 0, 0, 0
            tar.addfile(info, io.BytesIO(files[name]))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def read_archive(
    source: Path | bytes, limits: ArchiveLimits | None = None, name: str | None = None
) -> dict[str, bytes]:
    """{name without leading slash: content} of a bundle file (or its bytes); rejects links, escapes, duplicates
    and anything over the limits, naming the bundle (`name`, else the path) and the limit."""
    limits = limits or ArchiveLimits.from_env()
    shown = name or str(source if isinstance(source, Path) else "bundle")
    files: dict[str, bytes] = {}
    try:
        stream: IO[bytes] = open(source, "rb") if isinstance(source, Path) else io.BytesIO(source)  # noqa: SIM115
    except OSError as exc:
        raise InputError(shown, exc.strerror or str(exc)) from exc
    try:
        with stream, gzip.GzipFile(fileobj=stream, mode="rb") as inflated:
            headers = min(HEADER_ALLOWANCE * (limits.max_entries + 2), limits.max_total_bytes)
            bounded = _Bounded(inflated, limits.max_total_bytes + headers)
            with tarfile.open(fileobj=bounded, mode="r|") as tar:  # type: ignore[call-overload]
                _read_members(shown, tar, files, limits)
    except _TooLarge as exc:
        raise InputError(
            shown,
            f"inflates to more than {exc.limit} bytes: over the limit of {limits.max_total_bytes} bytes in all, "
            f"with room for headers ({limits.describe('max_total_bytes')})",
        ) from exc
    except (OSError, tarfile.TarError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(shown, f"not a gzipped tar bundle: {exc}") from exc
    return files


HEADER_ALLOWANCE = 8192
"""Bytes of tar headers (PAX records, padding) allowed per entry on top of the entries' contents (at most as many
as the contents themselves may have)."""


class _TooLarge(Exception):
    def __init__(self, limit: int):
        self.limit = limit


class _Bounded(io.RawIOBase):
    """The inflated stream, refusing to give more than `limit` bytes: tarfile reads a PAX header whole, whatever
    size it declares, before any entry can be checked."""

    def __init__(self, inner: IO[bytes], limit: int):
        self._inner, self._limit, self._read = inner, limit, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self._limit + 1 - self._read if size < 0 else min(size, self._limit + 1 - self._read)
        data = self._inner.read(max(want, 0))
        self._read += len(data)
        if self._read > self._limit:
            raise _TooLarge(self._limit)
        return data


def _read_members(shown: str, tar: tarfile.TarFile, files: dict[str, bytes], limits: ArchiveLimits) -> None:
    total = 0
    for count, member in enumerate(tar, start=1):
        if count > limits.max_entries:
            raise InputError(
                shown, f"more than the limit of {limits.max_entries} entries ({limits.describe('max_entries')})"
            )
        if member.isdir():
            continue
        name = member.name.lstrip("/")
        if not member.isfile() or ".." in name.split("/"):
            raise InputError(shown, f"entry {member.name!r} is not a plain file inside the bundle")
        if member.size > limits.max_entry_bytes:
            raise InputError(
                shown,
                f"entry {name!r} is larger than the limit of {limits.max_entry_bytes} bytes "
                f"({limits.describe('max_entry_bytes')})",
            )
        total += member.size
        if total > limits.max_total_bytes:
            raise InputError(
                shown,
                f"entries larger than the limit of {limits.max_total_bytes} bytes in all "
                f"({limits.describe('max_total_bytes')})",
            )
        if name in files:
            raise InputError(shown, f"entry {name!r} appears twice")
        extracted = tar.extractfile(member)
        files[name] = extracted.read() if extracted else b""
