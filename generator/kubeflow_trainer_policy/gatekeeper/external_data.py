"""Gatekeeper's `external_data` builtin: response object, per-key cache and provider clients.

Construction (frameworks constraint/pkg/client/drivers/rego/builtin.go, externaldata/response.go):
cached items first, then the provider's items for keys that missed; an item with a non-empty error
goes to `errors`, every other item to `responses`; a key the provider did not answer is in neither.
A failed call returns null lists and a `system_error`. When every key came from the cache,
`status_code` is 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kubeflow_trainer_policy.errors import InputError

PROVIDER_API_VERSION = "externaldata.gatekeeper.sh/v1beta1"
DEFAULT_CACHE_TTL_SECONDS = 180.0


@dataclass(frozen=True)
class ProviderItem:
    key: str
    value: Any
    error: str


@dataclass(frozen=True)
class ProviderAnswer:
    status_code: int
    items: tuple[ProviderItem, ...] = ()
    system_error: str = ""


class ProviderClient(Protocol):
    """How Gatekeeper reaches a provider: one call with all keys of one builtin call."""

    def fetch(self, keys: list[str]) -> ProviderAnswer: ...


def provider_request(keys: list[str]) -> dict[str, Any]:
    return {"apiVersion": PROVIDER_API_VERSION, "kind": "ProviderRequest", "request": {"keys": keys}}


def answer_from_response(status_code: int, body: Any) -> ProviderAnswer:
    """A ProviderResponse body as Gatekeeper reads it."""
    if status_code != 200:
        return ProviderAnswer(status_code, system_error=f"provider returned HTTP status {status_code}")
    if not isinstance(body, dict) or not isinstance(body.get("response"), dict):
        return ProviderAnswer(status_code, system_error="provider response has no `response` object")
    response = body["response"]
    if response.get("systemError"):
        return ProviderAnswer(status_code, system_error=str(response["systemError"]))
    items = []
    for item in response.get("items") or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            items.append(ProviderItem(item["key"], item.get("value"), str(item.get("error") or "")))
    return ProviderAnswer(status_code, tuple(items))


class InProcessProvider:
    """Calls a provider's request handler directly, through the same JSON documents as HTTPS."""

    def __init__(self, handle: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]):
        self._handle = handle

    @classmethod
    def serving(cls, jobsets: Iterable[dict[str, Any]]) -> InProcessProvider:
        """The provider's own request handler answering from these JobSets (as `provider serve --objects`)."""
        from kubeflow_trainer_policy_provider.handler import ProviderHandler
        from kubeflow_trainer_policy_provider.sources import StaticJobSetSource

        return cls(ProviderHandler(StaticJobSetSource(jobsets)).handle)

    def fetch(self, keys: list[str]) -> ProviderAnswer:
        status, body = self._handle(json.loads(json.dumps(provider_request(keys))))
        return answer_from_response(status, json.loads(json.dumps(body)))


class HttpsProvider:
    """POSTs a ProviderRequest over HTTPS as Gatekeeper does: TLS 1.3 verified against a CA, optional
    mTLS, and ONE deadline (the Provider's `spec.timeout`) for the whole call: connect, handshake,
    request and every byte of the answer, as Go's `http.Client{Timeout: ...}` applies it. A per-read
    timeout would let a provider that trickles one byte at a time hold the review forever.

    Bad TLS files (CA, client certificate or key) or a non-https URL raise InputError here, naming
    the file or URL, not at the first lookup."""

    def __init__(
        self,
        url: str,
        ca_file: str,
        timeout: float = 3.0,
        client_cert: tuple[str, str] | None = None,
        max_response_bytes: int = 16 * 1024 * 1024,
    ):
        from kubeflow_trainer_policy.gatekeeper import (
            https_client,  # ssl and http.client only when a provider is called
        )

        self.url = url
        self._client = https_client.DeadlineClient(url, https_client.tls_client_context(ca_file, client_cert))
        if not timeout > 0:
            raise InputError(url, f"timeout must be a positive number of seconds, got {timeout}")
        self._timeout = float(timeout)
        self._max_response_bytes = max_response_bytes

    def fetch(self, keys: list[str]) -> ProviderAnswer:
        from kubeflow_trainer_policy.gatekeeper.https_client import CallFailed

        body = json.dumps(provider_request(keys)).encode()
        try:
            status, payload = self._client.post_json(body, self._timeout, self._max_response_bytes)
        except CallFailed as exc:
            return ProviderAnswer(500, system_error=f'failed to send external data request: Post "{self.url}": {exc}')
        try:
            parsed = json.loads(payload)
        except (ValueError, RecursionError):
            return ProviderAnswer(status, system_error="provider response is not JSON")
        return answer_from_response(status, parsed)


@dataclass
class _CacheEntry:
    item: ProviderItem
    received: float


class ResponseCache:
    """Gatekeeper's provider response cache: per (provider, key), TTL, errors cached too."""

    def __init__(self, ttl_seconds: float = DEFAULT_CACHE_TTL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: dict[tuple[str, str], _CacheEntry] = {}

    def get(self, provider: str, key: str) -> ProviderItem | None:
        entry = self._entries.get((provider, key))
        if entry is None or self._clock() - entry.received > self.ttl_seconds:
            return None
        return entry.item

    def put(self, provider: str, item: ProviderItem) -> None:
        self._entries[(provider, item.key)] = _CacheEntry(item, self._clock())

    def clear(self) -> None:
        self._entries.clear()


def _failure(status_code: int, message: str) -> dict[str, Any]:
    return {"responses": None, "errors": None, "status_code": status_code, "system_error": message}


class ExternalData:
    """The builtin: `external_data({"provider": name, "keys": [...]})` -> Gatekeeper's response object."""

    def __init__(
        self,
        providers: dict[str, ProviderClient],
        cache: ResponseCache | None = None,
        fallback: ProviderClient | None = None,
    ):
        self.providers = providers
        self.cache = cache
        self.fallback = fallback
        """Answers for a provider name without a Provider object (`review` with --objects or --provider-url)."""
        self.calls = 0
        """Provider round trips made (cache hits do not count)."""

    def __call__(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("provider"), str):
            return _failure(400, "external_data request must be an object with a string `provider`")
        keys = request.get("keys")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return _failure(400, "external_data request `keys` must be a list of strings")
        name = request["provider"]
        client = self.providers.get(name, self.fallback)
        if client is None:
            return _failure(400, f"failed to get external data provider {name!r}: not found")
        responses: list[list[Any]] = []
        errors: list[list[Any]] = []
        missed: list[str] = []
        for key in keys:
            cached = self.cache.get(name, key) if self.cache else None
            if cached is None:
                missed.append(key)
            else:
                _collect(cached, responses, errors)
        status_code = 0
        if missed:
            self.calls += 1
            answer = client.fetch(missed)
            if answer.system_error:
                return _failure(answer.status_code, answer.system_error)
            status_code = answer.status_code
            for item in answer.items:
                if self.cache:
                    self.cache.put(name, item)
                _collect(item, responses, errors)
        return {"responses": responses, "errors": errors, "status_code": status_code, "system_error": ""}


def _collect(item: ProviderItem, responses: list[list[Any]], errors: list[list[Any]]) -> None:
    if item.error:
        errors.append([item.key, item.error])
    else:
        responses.append([item.key, item.value])
