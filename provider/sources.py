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


@dataclass(frozen=True)
class Lookup:
    """A JobSet (None when it does not exist), or an error when the answer cannot be trusted.

    Sources that keep answers (caches) build them once with `Lookup.of`, which also precomputes the
    provider value and its JSON so that serving a key costs no per-request work.
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
        return cls(jobset=jobset, value=value, value_json=json.dumps(value, separators=(",", ":")))


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
    """JobSets given as objects (files passed with --objects); anything else is ignored."""

    def __init__(self, objects: Iterable[dict[str, Any]]):
        self._jobsets: dict[tuple[str, str], Lookup] = {}
        for obj in objects:
            if obj.get("apiVersion") != JOBSET_API_VERSION or obj.get("kind") != "JobSet":
                continue
            metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            namespace, name = metadata.get("namespace") or "default", metadata.get("name")
            if isinstance(name, str):
                self._jobsets[(namespace, name)] = Lookup.of(obj)
        self._fragments = fragments_of(self._jobsets)

    def fragment(self, key: str) -> str | None:
        return self._fragments.get(key)

    def lookup(self, namespace: str, name: str) -> Lookup:
        return self._jobsets.get((namespace, name), NOT_FOUND)

    def __len__(self) -> int:
        return len(self._jobsets)
