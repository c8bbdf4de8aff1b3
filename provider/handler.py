"""ProviderRequest -> ProviderResponse, independent of the HTTP server that carries it."""

from __future__ import annotations

from typing import Any

from provider.jobset_state import jobset_state
from provider.sources import JobSetSource

API_VERSION = "externaldata.gatekeeper.sh/v1beta1"
MAX_KEYS = 1000


def provider_response(items: list[dict[str, Any]], system_error: str = "") -> dict[str, Any]:
    response: dict[str, Any] = {"idempotent": True, "items": items}
    if system_error:
        response["systemError"] = system_error
    return {"apiVersion": API_VERSION, "kind": "ProviderResponse", "response": response}


def parse_key(key: str) -> tuple[str, str] | None:
    namespace, sep, name = key.partition("/")
    if not sep or not namespace or not name or "/" in name:
        return None
    return namespace, name


class ProviderHandler:
    """Answers one decoded ProviderRequest from a JobSet source."""

    def __init__(self, source: JobSetSource, max_keys: int = MAX_KEYS):
        self.source = source
        self.max_keys = max_keys

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

    def item(self, key: str) -> dict[str, Any]:
        parsed = parse_key(key)
        if parsed is None:
            return {"key": key, "error": f"invalid key {key!r}: want <namespace>/<name>"}
        lookup = self.source.lookup(*parsed)
        if lookup.error:
            return {"key": key, "error": lookup.error}
        return {"key": key, "value": jobset_state(lookup.jobset)}

    def handle(self, body: Any) -> tuple[int, dict[str, Any]]:
        keys = self.keys_of(body)
        if isinstance(keys, str):
            return 200, provider_response([], system_error=keys)
        return 200, provider_response([self.item(key) for key in keys])
