"""Where JobSets come from: a static set of objects (offline) or the Kubernetes API (watch cache).

Every source answers `lookup(namespace, name)`; everything above the source is shared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from provider.jobset_state import JOBSET_API_VERSION


@dataclass(frozen=True)
class Lookup:
    """A JobSet (None when it does not exist), or an error when the answer cannot be trusted."""

    jobset: dict[str, Any] | None = None
    error: str = ""


class JobSetSource(Protocol):
    def lookup(self, namespace: str, name: str) -> Lookup: ...


class StaticJobSetSource:
    """JobSets given as objects (files passed with --objects); anything else is ignored."""

    def __init__(self, objects: Iterable[dict[str, Any]]):
        self._jobsets: dict[tuple[str, str], dict[str, Any]] = {}
        for obj in objects:
            if obj.get("apiVersion") != JOBSET_API_VERSION or obj.get("kind") != "JobSet":
                continue
            metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            namespace, name = metadata.get("namespace") or "default", metadata.get("name")
            if isinstance(name, str):
                self._jobsets[(namespace, name)] = obj

    def lookup(self, namespace: str, name: str) -> Lookup:
        return Lookup(jobset=self._jobsets.get((namespace, name)))

    def __len__(self) -> int:
        return len(self._jobsets)
