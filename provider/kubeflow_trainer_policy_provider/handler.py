"""ProviderRequest -> ProviderResponse, independent of the HTTP server that carries it.

Shared by the HTTPS server (`provider serve`), the in-process provider of `trainer-policy review
--objects` and the suites: only the JobSet source differs. `handle` returns the response as a
dict; `answer` returns the same document as JSON bytes, assembled from the values' precomputed
JSON (the server's hot path: no per-key serialisation). Both produce the same document.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy_provider.keys import parse_key
from kubeflow_trainer_policy_provider.sources import NOT_FOUND, JobSetSource, Lookup

API_VERSION = "externaldata.gatekeeper.sh/v1beta1"
MAX_KEYS = 1000

_PREFIX = '{"apiVersion":"' + API_VERSION + '","kind":"ProviderResponse","response":{"idempotent":true,"items":['


def provider_response(items: list[dict[str, Any]], system_error: str = "") -> dict[str, Any]:
    response: dict[str, Any] = {"idempotent": True, "items": items}
    if system_error:
        response["systemError"] = system_error
    return {"apiVersion": API_VERSION, "kind": "ProviderResponse", "response": response}


def _dumps(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"))


def invalid_key_error(key: str) -> str:
    return f"invalid key {key[:300]!r}: want <namespace>/<name>"


@dataclass(frozen=True)
class Answer:
    """One ProviderResponse as bytes, with what the metrics need."""

    body: bytes
    keys: int = 0
    key_errors: int = 0
    system_error: str = ""


class ProviderHandler:
    """Answers one decoded ProviderRequest from a JobSet source.

    `timeout` (seconds) bounds one request: keys not looked up before it expires get an error,
    so the answer always arrives before Gatekeeper's own timeout.
    """

    def __init__(
        self,
        source: JobSetSource,
        max_keys: int = MAX_KEYS,
        timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.source = source
        self.max_keys = max_keys
        self.timeout = timeout
        self._clock = clock

    def keys_of(self, body: Any) -> list[str] | str:
        """The request's keys, or a message saying why the request is malformed."""
        if not isinstance(body, dict):
            return "request body must be a JSON object"
        if body.get("apiVersion") != API_VERSION or body.get("kind") != "ProviderRequest":
            return f"request must be apiVersion {API_VERSION}, kind ProviderRequest"
        request = body.get("request")
        keys = request.get("keys") if isinstance(request, dict) else None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return "request.keys must be a list of strings"
        if len(keys) > self.max_keys:
            return f"too many keys: {len(keys)} > {self.max_keys}"
        return keys

    def _lookups(self, keys: list[str]) -> list[Lookup | str]:
        """Per key: the source's Lookup, or an error message (bad key, deadline passed)."""
        deadline = None if self.timeout is None else self._clock() + self.timeout
        out: list[Lookup | str] = []
        clock = self._clock
        for key in keys:
            if deadline is not None and clock() > deadline:
                out.append(f"request timed out after {self.timeout:g}s before this key")
                continue
            parsed = parse_key(key)
            out.append(invalid_key_error(key) if parsed is None else self.source.lookup(*parsed))
        return out

    def handle(self, body: Any) -> tuple[int, dict[str, Any]]:
        keys = self.keys_of(body)
        if isinstance(keys, str):
            return 200, provider_response([], system_error=keys)
        items: list[dict[str, Any]] = []
        for key, lookup in zip(keys, self._lookups(keys), strict=True):
            if isinstance(lookup, str):
                items.append({"key": key, "error": lookup})
            elif lookup.error:
                items.append({"key": key, "error": lookup.error})
            else:
                items.append({"key": key, "value": lookup.answer()})
        return 200, provider_response(items)

    def answer(self, body: Any) -> Answer:
        """`handle(body)` as compact JSON bytes (the server's hot path: one loop, no per-key objects)."""
        keys = self.keys_of(body)
        if isinstance(keys, str):
            return Answer(_dumps(provider_response([], system_error=keys)).encode(), system_error=keys)
        table = self._memory_table()
        if table is not None:
            return self._answer_from_table(keys, table)
        parts: list[str] = []
        errors = 0
        lookup_in = self.source.lookup
        parse = parse_key
        clock = self._clock
        deadline = None if self.timeout is None else clock() + self.timeout
        for key in keys:
            if deadline is not None and clock() > deadline:
                message = f"request timed out after {self.timeout:g}s before this key"
            elif (parsed := parse(key)) is None:
                message = invalid_key_error(key)
            else:
                lookup = lookup_in(*parsed)
                if not lookup.error:
                    parts.append(
                        '{"key":' + _dumps(key) + ',"value":' + (lookup.value_json or _dumps(lookup.answer())) + "}"
                    )
                    continue
                message = lookup.error
            errors += 1
            parts.append('{"key":' + _dumps(key) + ',"error":' + _dumps(message) + "}")
        return Answer((_PREFIX + ",".join(parts) + "]}}").encode(), len(keys), errors)

    def answer_from_memory(self, body: Any) -> Answer | None:
        """`answer(body)` when it needs no Kubernetes API call right now, else None (the event loop then runs
        `answer` on a thread): the source may have stopped answering from memory since the caller checked."""
        keys = self.keys_of(body)
        if isinstance(keys, str):
            return Answer(_dumps(provider_response([], system_error=keys)).encode(), system_error=keys)
        table = self._memory_table()
        return None if table is None else self._answer_from_table(keys, table)

    def _memory_table(self) -> dict[str, str] | None:
        """The source's value JSON by key, when it answers from memory right now (a valid key not in it
        is not found, unless the source's `scope_error` names its namespace); None when lookups must go
        through `lookup` (a watch cache that is not synced or not known to be fresh)."""
        source = self.source
        answers_from_memory = getattr(source, "answers_from_memory", None)
        if answers_from_memory is None or not answers_from_memory():
            return None
        return getattr(source, "values_by_key", None)

    def _answer_from_table(self, keys: list[str], table: dict[str, str]) -> Answer:
        """`answer` for a source held in memory: one dict read per key, no deadline needed."""
        get = table.get
        scope_error = getattr(self.source, "scope_error", None)
        parts: list[str] = []
        errors = 0
        for key in keys:
            value = get(key)
            if value is not None:  # the key is exactly a served key: [a-z0-9.-/] only, safe to quote as is
                parts.append('{"key":"' + key + '","value":' + value + "}")
                continue
            parsed = parse_key(key)
            outside = "" if parsed is None or scope_error is None else scope_error(parsed[0])
            if parsed is None or outside:  # a namespace the source cannot see: "not found" would allow
                errors += 1
                message = invalid_key_error(key) if parsed is None else outside
                parts.append('{"key":' + _dumps(key) + ',"error":' + _dumps(message) + "}")
            else:
                value = get(f"{parsed[0]}/{parsed[1]}", NOT_FOUND.value_json)
                parts.append('{"key":' + _dumps(key) + ',"value":' + value + "}")
        return Answer((_PREFIX + ",".join(parts) + "]}}").encode(), len(keys), errors)


__all__ = ["API_VERSION", "MAX_KEYS", "Answer", "ProviderHandler", "parse_key", "provider_response"]
