"""Where JobSets come from: a static set of objects (offline) or the Kubernetes API (watch cache).

Every source answers `lookup(namespace, name)`; everything above the source is shared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kubeflow_trainer_policy_provider.jobset_state import JOBSET_API_VERSION, active_replicated_jobs, jobset_state
from kubeflow_trainer_policy_provider.keys import canonical_key


@dataclass(frozen=True, slots=True)
class Lookup:
    """The answer for one key: a JobSet's provider value, or an error when it cannot be trusted.

    Caches build answers once with `Lookup.of`, which keeps only the value and its JSON (not the
    JobSet), shared between every key with the same value. A source that does not precompute may
    return `Lookup(jobset=...)` (None: not found) and leave the value to `answer()`.
    """

    jobset: dict[str, Any] | None = None
    error: str = ""
    value: dict[str, Any] | None = None
    """`jobset_state(jobset)`, when precomputed."""
    value_json: str = ""
    """Compact JSON of `value`, when precomputed."""

    @classmethod
    def of(cls, jobset: dict[str, Any] | None) -> Lookup:
        """The shared answer for `jobset` (None: not found); JSON is built once per distinct value."""
        active = tuple(active_replicated_jobs(jobset)) if jobset is not None else None
        shared = _SHARED.get(active)
        if shared is None:
            value = jobset_state(jobset)
            shared = cls(value=value, value_json=json.dumps(value, separators=(",", ":")))
            if len(_SHARED) < _MAX_SHARED:
                _SHARED[active] = shared
        return shared

    def answer(self) -> dict[str, Any]:
        """The provider value for this key (not meaningful when `error` is set)."""
        return self.value if self.value is not None else jobset_state(self.jobset)

    @property
    def found(self) -> bool:
        return bool(self.answer()["found"])


_SHARED: dict[tuple[str, ...] | None, Lookup] = {}
"""Interned answers by active replicated jobs (None: not found): JobSets share a handful of values."""
_MAX_SHARED = 4096


NOT_FOUND = Lookup.of(None)


class JobSetSource(Protocol):
    def lookup(self, namespace: str, name: str) -> Lookup: ...


class MemorySource(Protocol):
    """Optional fast path: while `answers_from_memory()`, `values_by_key` maps every served key
    (`keys.canonical_key`) to its value's JSON, and a valid key missing from it is not found, unless
    the source also has `scope_error(namespace) -> str` and it names that namespace (an error answer)."""

    def answers_from_memory(self) -> bool: ...

    @property
    def values_by_key(self) -> dict[str, str]: ...


def values_of(lookups: dict[tuple[str, str], Lookup]) -> dict[str, str]:
    """Value JSON by served key for every JobSet of a cache (names that cannot be keys are left out)."""
    out: dict[str, str] = {}
    for (namespace, name), lookup in lookups.items():
        key = canonical_key(namespace, name)
        if key is not None:
            out[key] = lookup.value_json
    return out


class StaticJobSetSource:
    """JobSets given as objects (files passed with --objects); anything else is ignored.

    Keeps the precomputed answer of each JobSet, never the object: `objects` may be a generator
    that parses one document at a time."""

    def __init__(self, objects: Iterable[dict[str, Any]]):
        self._jobsets: dict[tuple[str, str], Lookup] = {}
        for obj in objects:
            if obj.get("apiVersion") != JOBSET_API_VERSION or obj.get("kind") != "JobSet":
                continue
            metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            namespace, name = metadata.get("namespace") or "default", metadata.get("name")
            if isinstance(name, str):
                self._jobsets[(namespace, name)] = Lookup.of(obj)  # the answer only: the object is dropped
        self._values = values_of(self._jobsets)

    @property
    def values_by_key(self) -> dict[str, str]:
        """Value JSON by key, for every JobSet (a valid key not in it is not found)."""
        return self._values

    def answers_from_memory(self) -> bool:
        """Always: lookups never block (the server answers them on its event loop)."""
        return True

    def lookup(self, namespace: str, name: str) -> Lookup:
        return self._jobsets.get((namespace, name), NOT_FOUND)

    def __len__(self) -> int:
        return len(self._jobsets)
