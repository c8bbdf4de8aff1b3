"""Manifests from the command line's paths: files, folders and `-` (stdin), each file one or more YAML/JSON
documents. `iter_manifests` is the one function that turns paths into documents for `review`, `podsets` and
their `--objects`. Every file and stdin is read through the bounded reader
(`kubeflow_trainer_policy_provider.reader`: size, aliases, depth, document count, duplicate keys, each limit
per file)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.errors import InputError

STDIN = "-"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Manifest:
    file: str
    """The path as found (a folder's files below it), or `<stdin>`."""
    index: int
    """The document's number in its file, from 1 (`kind: List` items count one each), as in `file#N`."""
    body: dict[str, Any]

    @property
    def source(self) -> str:
        return f"{self.file}#{self.index}"


@dataclass(frozen=True)
class Unreadable:
    """A file that could not be read or parsed: reported in its place, the other files still are."""

    file: str
    error: InputError


def manifest_files(paths: Iterable[str | Path]) -> list[str]:
    """Each path, a folder replaced by its YAML/JSON files below it (sorted; hidden files and folders skipped, and
    symlinked folders not followed), within the reader's `max_folder_entries`."""
    files: list[str] = []
    for raw in paths:
        path = str(raw)
        if path == STDIN:
            files.append(path)
        elif Path(path).is_dir():
            files += _folder_files(path)
        elif Path(path).exists():
            files.append(path)
        else:
            raise InputError(path, "No such file or directory")
    return files


def _folder_files(folder: str) -> list[str]:
    """The manifest files below `folder`, refused once the walk has looked at more entries than the limit."""
    from kubeflow_trainer_policy_provider.reader import current_limits

    limits = current_limits()
    seen = 0
    found: list[str] = []
    for top, folders, names in os.walk(folder, onerror=_unreadable_folder):
        seen += len(folders) + len(names)
        if seen > limits.max_folder_entries:
            raise InputError(
                folder,
                f"more than the limit of {limits.max_folder_entries} files and folders below it "
                f"({limits.describe('max_folder_entries')})",
            )
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in names:
            file = os.path.join(top, name)
            if not name.startswith(".") and name.endswith(MANIFEST_SUFFIXES) and os.path.isfile(file):
                found.append(file)
    return sorted(found, key=lambda f: Path(f).parts)


def _unreadable_folder(error: OSError) -> None:
    raise InputError(str(error.filename), error.strerror or str(error))


def iter_manifests(paths: Iterable[str | Path]) -> Iterator[Manifest | Unreadable]:
    """Every document of every file of `paths`, in order; a file that cannot be read yields one Unreadable."""
    from kubeflow_trainer_policy_provider.reader import display_name, read_documents

    for file in manifest_files(paths):
        name = display_name(file)
        try:
            documents = read_documents(file)  # `-` is stdin, read within the same limits
        except InputError as exc:
            yield Unreadable(name, exc)
            continue
        for index, document in enumerate(documents, start=1):
            yield Manifest(name, index, document.body)


def read_manifests(paths: Iterable[str | Path]) -> list[Manifest]:
    """Every document of `paths`; the first unreadable file stops it (for inputs that must all be read)."""
    manifests: list[Manifest] = []
    for item in iter_manifests(paths):
        if isinstance(item, Unreadable):
            raise item.error
        manifests.append(item)
    return manifests
