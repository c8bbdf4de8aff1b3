"""Where JobSets come from: a static set of objects (offline) or the Kubernetes API (watch cache).

Every source answers `lookup(namespace, name)`; everything above the source is shared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from provider.jobset_state import JOBSET_API_VERSION, jobset_state
from provider.keys import parse_key, value_item_json


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
        value = jobset_state(jobset)
        value_json = json.dumps(value, separators=(",", ":"))
        shared = _SHARED.get(value_json)
        if shared is None:
            shared = cls(value=value, value_json=value_json)
            if len(_SHARED) < _MAX_SHARED:
                _SHARED[value_json] = shared
        return shared

    def answer(self) -> dict[str, Any]:
        """The provider value for this key (not meaningful when `error` is set)."""
        return self.value if self.value is not None else jobset_state(self.jobset)

    @property
    def found(self) -> bool:
        return bool(self.answer()["found"])


_SHARED: dict[str, Lookup] = {}
"""Interned answers by JSON: most JobSets share a handful of values, so 100k keys cost 100k pointers."""
_MAX_SHARED = 4096


NOT_FOUND = Lookup.of(None)


class JobSetSource(Protocol):
    def lookup(self, namespace: str, name: str) -> Lookup: ...


class FragmentSource(Protocol):
    """Optional fast path: the complete response item JSON for a key the source can answer from
    memory right now, or None (then the handler parses the key and calls `lookup`)."""

    def fragment(self, key: str) -> str | None: ...


def fragments_of(lookups: dict[tuple[str, str], Lookup]) -> dict[str, str]:
    """Response items for every valid key of a cache (keys that fail `parse_key` are left to `lookup`)."""
    out: dict[str, str] = {}
    for (namespace, name), lookup in lookups.items():
        key = f"{namespace}/{name}"
        if parse_key(key) is not None:
            out[key] = value_item_json(key, lookup.value_json)
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
        self._fragments = fragments_of(self._jobsets)

    def fragment(self, key: str) -> str | None:
        return self._fragments.get(key)

    @property
    def fragments(self) -> dict[str, str]:
        """Response items by key, for every JobSet (a valid key not in it is not found)."""
        return self._fragments

    def answers_from_memory(self) -> bool:
        """Always: lookups never block (the server answers them on its event loop)."""
        return True

    def lookup(self, namespace: str, name: str) -> Lookup:
        return self._jobsets.get((namespace, name), NOT_FOUND)

    def __len__(self) -> int:
        return len(self._jobsets)
