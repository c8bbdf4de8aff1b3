"""JobSets from the Kubernetes API: a list+watch cache with a live GET fallback.

State machine of the watcher thread:
  list (paginated, consistent snapshot)  -> cache replaced, `synced`, first time: `ready`
  watch from the list's resourceVersion, bookmarks on -> events applied, resourceVersion advanced
  stream ended normally (timeoutSeconds)  -> resume the watch from the last resourceVersion
  410 Gone (on connect or as an ERROR event) -> re-list
  any failure (connection refused/reset, HTTP 5xx, bad stream) -> re-list after a backoff
                                             (0.2 s doubling to 10 s, with jitter)

"An answer that cannot be trusted is an error": `synced` is false from the moment a stream ends
until a new watch is open (or a re-list has finished). While it is false every lookup is a live GET
(200 -> the JobSet, 404 -> not found, anything else -> a per-key error), never the cached value.
While it is true, a key missing from the cache is "not found" and no API call is made.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from dataclasses import dataclass
from typing import Any

import requests

from kubeflow_trainer_policy_provider.jobset_state import JOBSET_API_VERSION
from kubeflow_trainer_policy_provider.keys import canonical_key
from kubeflow_trainer_policy_provider.kube_auth import KubeAuthError, KubeCredentials
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.sources import NOT_FOUND, Lookup, values_of


@dataclass(frozen=True)
class WatchSettings:
    namespace: str | None = None
    """Watch one namespace only; None watches JobSets in all namespaces."""
    page_size: int = 500
    watch_timeout_seconds: int = 300
    get_timeout: float = 0.5
    list_timeout: float = 60.0
    backoff_initial: float = 0.2
    backoff_max: float = 10.0


class WatchError(RuntimeError):
    """The API answered a list or watch in a way the cache cannot use."""


class WatchGone(WatchError):
    """410 Gone: the resourceVersion is too old; re-list."""


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace", "")), str(metadata.get("name", ""))


class KubeJobSetSource:
    """`JobSetSource` backed by the API server; call `start()` once, `stop()` at the end."""

    def __init__(
        self,
        credentials: KubeCredentials,
        metrics: ProviderMetrics,
        logger: JsonLogger,
        settings: WatchSettings | None = None,
    ):
        self.credentials = credentials
        self.settings = settings or WatchSettings()
        self._metrics = metrics
        self._logger = logger
        self._store: dict[tuple[str, str], Lookup] = {}
        """Answers prepared once per watch event (`Lookup.of`, the value only, shared between equal values):
        serving a key is one dict read."""
        self._values: dict[str, str] = {}
        """The same answers' value JSON by served key (the handler's fast path)."""
        self._resource_version = ""
        self._synced = False
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: requests.Response | None = None
        self._watch_session = credentials.session()
        self._local = threading.local()
        metrics.add_gauge("provider_cache_jobsets", "JobSets held in the watch cache.", lambda: len(self._store))
        metrics.add_gauge("provider_cache_synced", "1 while the watch cache is trusted.", lambda: float(self._synced))
        metrics.add_gauge("provider_ready", "1 once the first list has completed.", lambda: float(self.ready))

    # ------------------------------------------------------------------ reads
    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def synced(self) -> bool:
        return self._synced

    def __len__(self) -> int:
        return len(self._store)

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def answers_from_memory(self) -> bool:
        """While synced, lookups are dict reads; otherwise they may GET from the API (off the event loop)."""
        return self._synced

    @property
    def values_by_key(self) -> dict[str, str]:
        """Value JSON by key, authoritative only while `answers_from_memory()` (synced)."""
        return self._values

    def lookup(self, namespace: str, name: str) -> Lookup:
        if self._synced:
            return self._store.get((namespace, name), NOT_FOUND)
        return self._get(namespace, name)

    def _collection_path(self, namespace: str | None) -> str:
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{self.credentials.server}/apis/{JOBSET_API_VERSION}{ns}/jobsets"

    def _get(self, namespace: str, name: str) -> Lookup:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self.credentials.session()
        url = f"{self._collection_path(namespace)}/{name}"
        try:
            resp = session.get(url, headers=self.credentials.headers(), timeout=self.settings.get_timeout)
        except (requests.RequestException, OSError, KubeAuthError) as exc:
            self._metrics.api_calls.inc(verb="get", code="error")
            return Lookup(error=f"JobSet cache not synced and the Kubernetes API GET failed: {_short(exc)}")
        self._metrics.api_calls.inc(verb="get", code=str(resp.status_code))
        self._unauthorized(resp)
        if resp.status_code == 200:
            return Lookup.of(resp.json())
        if resp.status_code == 404 and _is_object_not_found(resp, name):
            return NOT_FOUND
        return Lookup(error=f"JobSet cache not synced and the Kubernetes API GET answered HTTP {resp.status_code}")

    # -------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="jobset-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.raw.connection.sock.shutdown(2)  # wake a blocked read
            with contextlib.suppress(Exception):
                response.close()
        if self._thread is not None:
            self._thread.join(timeout)

    # ---------------------------------------------------------- watcher thread
    def _run(self) -> None:
        backoff = self.settings.backoff_initial
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._synced = False
                    self._list()
                    need_list = False
                self._watch()
                self._metrics.watch_restarts.inc(reason="stream_ended")
                backoff = self.settings.backoff_initial
            except WatchGone as exc:
                need_list = True
                self._metrics.watch_restarts.inc(reason="gone")
                self._logger.info("watch_gone_relisting", detail=str(exc), resource_version=self._resource_version)
            except Exception as exc:  # anything else: distrust the cache, re-list after a backoff
                self._synced = False
                if self._stop.is_set():
                    break
                need_list = True
                self._metrics.watch_restarts.inc(reason="error")
                delay = backoff * (0.5 + random.random())
                self._logger.warning("watch_failed", error=_short(exc), retry_in_s=round(delay, 3))
                self._stop.wait(delay)
                backoff = min(backoff * 2, self.settings.backoff_max)
        self._synced = False

    def _list(self) -> None:
        items: dict[tuple[str, str], Lookup] = {}
        cont = ""
        url = self._collection_path(self.settings.namespace)
        while True:
            params = {"limit": str(self.settings.page_size)}
            if cont:
                params["continue"] = cont
            resp = self._watch_session.get(
                url, params=params, headers=self.credentials.headers(), timeout=self.settings.list_timeout
            )
            self._metrics.api_calls.inc(verb="list", code=str(resp.status_code))
            self._unauthorized(resp)
            if resp.status_code == 410 and cont:  # continue token expired mid-list: start over
                items, cont = {}, ""
                continue
            if resp.status_code != 200:
                raise WatchError(f"list JobSets: HTTP {resp.status_code}: {resp.text[:200]}")
            body = resp.json()
            for obj in body.get("items") or []:
                items[_key(obj)] = Lookup.of(obj)
            metadata = body.get("metadata") or {}
            cont = metadata.get("continue") or ""
            if not cont:
                break
        self.install_list(items, str(metadata.get("resourceVersion", "")))

    def _unauthorized(self, resp: requests.Response) -> None:
        if resp.status_code == 401:  # an expired exec credential: fetch a new one before the next call
            self.credentials.unauthorized()

    def install_list(self, items: dict[tuple[str, str], Lookup], resource_version: str) -> None:
        """Replace the cache with a complete list's answers and trust it (the end of a list)."""
        self._store, self._values = items, values_of(items)
        self._resource_version = resource_version
        self._synced = True
        first = not self._ready.is_set()
        self._ready.set()
        self._logger.info("jobsets_listed", count=len(items), resource_version=resource_version, first=first)

    def _watch(self) -> None:
        params = {
            "watch": "1",
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(max(1, round(self.settings.watch_timeout_seconds * (0.8 + 0.4 * random.random())))),
        }
        read_timeout = self.settings.watch_timeout_seconds * 1.2 + 30
        resp = self._watch_session.get(
            self._collection_path(self.settings.namespace),
            params=params,
            headers=self.credentials.headers(),
            stream=True,
            timeout=(5.0, read_timeout),
        )
        self._metrics.api_calls.inc(verb="watch", code=str(resp.status_code))
        self._unauthorized(resp)
        self._response = resp
        try:
            # A stop() that came while the watch was being opened found no response to close: it would wait for the
            # stream (minutes). Set before this check, the response is closed by any stop() that comes after it.
            if self._stop.is_set():
                return
            if resp.status_code == 410:
                raise WatchGone("watch: HTTP 410")
            if resp.status_code != 200:
                raise WatchError(f"watch JobSets: HTTP {resp.status_code}: {resp.text[:200]}")
            self._synced = True
            for line in resp.iter_lines(chunk_size=None):
                if self._stop.is_set():
                    return
                if line:
                    self._apply(json.loads(line))
        finally:
            self._synced = False  # until the next watch is open, the cache may lag: live GETs
            self._response = None
            resp.close()

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") if isinstance(event.get("object"), dict) else {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise WatchGone(str(obj.get("message", "410 Gone")))
            raise WatchError(f"watch error event: {obj.get('message', obj)}")
        if kind in ("ADDED", "MODIFIED"):
            key = _key(obj)
            lookup = self._store[key] = Lookup.of(obj)
            text = canonical_key(*key)
            if text is not None:
                self._values[text] = lookup.value_json
        elif kind == "DELETED":
            key = _key(obj)
            self._store.pop(key, None)
            text = canonical_key(*key)
            if text is not None:
                self._values.pop(text, None)
        elif kind != "BOOKMARK":
            raise WatchError(f"unknown watch event type {kind!r}")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self._resource_version = str(version)


def _is_object_not_found(resp: requests.Response, name: str) -> bool:
    """A 404 Status about this object (not a 404 for a resource type the server does not serve)."""
    try:
        body = resp.json()
    except ValueError:
        return False
    return (
        isinstance(body, dict) and body.get("reason") == "NotFound" and (body.get("details") or {}).get("name") == name
    )


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"
