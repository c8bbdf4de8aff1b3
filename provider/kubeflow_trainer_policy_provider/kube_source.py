"""JobSets from the Kubernetes API: a list+watch cache with a live GET fallback, fresh or failing.

State machine of the watcher thread:
  list (paginated, consistent snapshot)  -> cache replaced, `synced`, first time: `ready`
  watch from the list's resourceVersion, bookmarks on -> events applied, resourceVersion advanced
  stream ended normally (timeoutSeconds)  -> resume the watch from the last resourceVersion
  410 Gone (on connect or as an ERROR event) -> re-list
  any failure (connection refused/reset, HTTP 5xx, bad stream), or the stream aborted by the prober
                                          -> re-list after a backoff (0.2 s doubling to 10 s, with jitter)

"An answer that cannot be trusted is an error". The cache is trusted only while it is synced AND known to
be fresh: its view was confirmed at most `max_staleness` seconds ago. Confirmations come from
  - a completed list (a quorum read: the cache is the API's state when its first page was asked for), and
  - the prober thread: every `probe_interval` it asks the same API server for one JobSet (`limit=1`, a quorum
    read) on its own connection; an answer within `probe_timeout` to a probe sent at time t, with the same
    watch stream open from before t until the answer, confirms the cache as of t.
A probe that times out or cannot connect means the API server the watch depends on is not answering (frozen,
overloaded, partitioned): the watch stream is aborted at once and the cache re-listed once the API answers,
since an API server that stalled may also have stalled the events of its own watch cache. A cache that has
not been confirmed for `max_staleness` (probes answered with errors, say) is aborted the same way.

While the cache is not trusted every lookup is a live GET (200 -> the JobSet, 404 -> not found, anything
else -> a per-key error), never the cached value: with a frozen API server that is an error within
`get_timeout`, so the rule denies. While it is trusted, a key missing from the cache is "not found" and no
API call is made. A lookup outside the watched namespace (`namespace`) is always an error: this provider
cannot see it, and "not found" would let the rule allow.

What the probe cannot see: a delay inside a responsive API server between etcd and its own watch cache
(milliseconds when healthy), and a watch connection dropped by the network while new connections work (TCP
keepalive on the watch socket finds it within `keepalive_idle + 3 * keepalive_interval` seconds).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import requests

from kubeflow_trainer_policy_provider.jobset_state import JOBSET_API_VERSION
from kubeflow_trainer_policy_provider.keys import canonical_key
from kubeflow_trainer_policy_provider.kube_auth import KubeAuthError, KubeCredentials
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.sources import NOT_FOUND, Lookup, values_of

DEFAULT_MAX_STALENESS = 5.0
"""Seconds: Gatekeeper's answer reaches the rule within its own Provider timeout; the JobSet state it is given
is at most this much older than the request."""


@dataclass(frozen=True)
class WatchSettings:
    namespace: str | None = None
    """Watch one namespace only; None watches JobSets in all namespaces. Lookups elsewhere are errors."""
    page_size: int = 500
    watch_timeout_seconds: int = 300
    get_timeout: float = 0.5
    list_timeout: float = 10.0
    """Seconds a list page (or a watch's response head) may keep the provider waiting for its next bytes."""
    max_staleness: float = DEFAULT_MAX_STALENESS
    """Seconds since the cache's last confirmation after which it is no longer trusted."""
    probe_interval: float | None = None
    """Seconds between probes (None: a quarter of `max_staleness`, at most 1 s)."""
    probe_timeout: float | None = None
    """Seconds a probe may take (None: half of `max_staleness`, at most 2 s)."""
    keepalive_idle: int = 5
    keepalive_interval: int = 2
    backoff_initial: float = 0.2
    backoff_max: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.max_staleness < math.inf:
            raise ValueError(f"max_staleness must be a positive number of seconds, got {self.max_staleness}")

    @property
    def probe_every(self) -> float:
        return self.probe_interval if self.probe_interval is not None else min(1.0, self.max_staleness / 4)

    @property
    def probe_within(self) -> float:
        return self.probe_timeout if self.probe_timeout is not None else min(2.0, self.max_staleness / 2)


class WatchError(RuntimeError):
    """The API answered a list or watch in a way the cache cannot use."""


class WatchGone(WatchError):
    """410 Gone: the resourceVersion is too old; re-list."""


class WatchAborted(WatchError):
    """The prober ended the stream: the API server stopped answering, or the cache went unconfirmed too long."""


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
        self._confirmed_at = -math.inf
        """time.monotonic() as of which the cache is known to hold the API's state."""
        self._stream = 0
        """Bumped whenever the stream the cache follows changes (opened, ended, re-listed): a probe confirms
        the cache only if the stream it was sent under is still the one open when it is answered."""
        self._abort_reason = ""
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._prober: threading.Thread | None = None
        self._response: requests.Response | None = None
        self._watch_session = credentials.session()
        self._local = threading.local()
        metrics.add_gauge("provider_cache_jobsets", "JobSets held in the watch cache.", lambda: len(self._store))
        metrics.add_gauge("provider_cache_synced", "1 while the watch cache is trusted.", lambda: float(self.fresh))
        metrics.add_gauge(
            "provider_cache_age_seconds",
            "Seconds since the watch cache was last confirmed fresh (-1: never).",
            self._age_metric,
        )
        metrics.add_gauge("provider_ready", "1 once the first list has completed.", lambda: float(self.ready))

    # ------------------------------------------------------------------ reads
    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def synced(self) -> bool:
        """A list is complete and its watch open (or about to be): the cache follows the API."""
        return self._synced

    @property
    def fresh(self) -> bool:
        """Synced, and confirmed within `max_staleness`: only then is the cache used for answers."""
        return self._synced and time.monotonic() - self._confirmed_at <= self.settings.max_staleness

    @property
    def age(self) -> float:
        """Seconds since the cache was last confirmed (inf: never)."""
        return time.monotonic() - self._confirmed_at

    def _age_metric(self) -> float:
        age = self.age
        return -1.0 if math.isinf(age) else round(age, 3)

    def __len__(self) -> int:
        return len(self._store)

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def answers_from_memory(self) -> bool:
        """While fresh, lookups are dict reads; otherwise they may GET from the API (off the event loop)."""
        return self.fresh

    @property
    def values_by_key(self) -> dict[str, str]:
        """Value JSON by key, authoritative only while `answers_from_memory()` (fresh)."""
        return self._values

    def scope_error(self, namespace: str) -> str:
        """Why this source cannot answer for `namespace` ("" when it can)."""
        watched = self.settings.namespace
        if watched is None or namespace == watched:
            return ""
        return (
            f"this provider watches JobSets in namespace {watched!r} only (--namespace) and cannot see "
            f"namespace {namespace!r}"
        )

    def lookup(self, namespace: str, name: str) -> Lookup:
        outside = self.scope_error(namespace)
        if outside:
            return Lookup(error=outside)
        if self.fresh:
            return self._store.get((namespace, name), NOT_FOUND)
        return self._get(namespace, name)

    def _collection_path(self, namespace: str | None) -> str:
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{self.credentials.server}/apis/{JOBSET_API_VERSION}{ns}/jobsets"

    def _why_live(self) -> str:
        if not self._synced:
            return "JobSet cache not synced"
        return f"JobSet cache not confirmed for {self.age:.1f}s (bound {self.settings.max_staleness:g}s)"

    def _get(self, namespace: str, name: str) -> Lookup:
        why = self._why_live()
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self.credentials.session()
        url = f"{self._collection_path(namespace)}/{name}"
        try:
            resp = session.get(url, headers=self.credentials.headers(), timeout=self.settings.get_timeout)
        except (requests.RequestException, OSError, KubeAuthError) as exc:
            self._metrics.api_calls.inc(verb="get", code="error")
            return Lookup(error=f"{why} and the Kubernetes API GET failed: {self._short(exc)}")
        self._metrics.api_calls.inc(verb="get", code=str(resp.status_code))
        self._unauthorized(resp)
        if resp.status_code == 200:
            return Lookup.of(resp.json())
        if resp.status_code == 404 and _is_object_not_found(resp, name):
            return NOT_FOUND
        return Lookup(error=f"{why} and the Kubernetes API GET answered HTTP {resp.status_code}")

    def _short(self, exc: BaseException) -> str:
        """An exception for a log line or an answer: one line, no credential in it (redacted before it is cut)."""
        return redact(f"{type(exc).__name__}: {exc}", self.credentials.token)[:400]

    # -------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="jobset-watch", daemon=True)
        self._thread.start()
        self._prober = threading.Thread(target=self._probe_loop, name="jobset-probe", daemon=True)
        self._prober.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._close_stream()
        for thread in (self._thread, self._prober):
            if thread is not None:
                thread.join(timeout)

    def _close_stream(self) -> None:
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.raw.connection.sock.shutdown(socket.SHUT_RDWR)  # wake a blocked read
            with contextlib.suppress(Exception):
                response.close()

    def _abort(self, reason: str) -> None:
        """Stop trusting the cache now and make the watcher re-list (the prober's verdict)."""
        if self._abort_reason:
            return
        self._abort_reason = reason
        self._synced = False
        self._stream += 1
        self._metrics.watch_restarts.inc(reason="stale")
        self._logger.warning("watch_aborted", reason=reason, resource_version=self._resource_version)
        self._close_stream()

    # ---------------------------------------------------------- watcher thread
    def _run(self) -> None:
        backoff = self.settings.backoff_initial
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._synced = False
                    self._abort_reason = ""
                    self._list()
                    need_list = False
                self._watch()
                if self._abort_reason:
                    raise WatchAborted(self._abort_reason)
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
                if not isinstance(exc, WatchAborted) and not self._abort_reason:
                    self._metrics.watch_restarts.inc(reason="error")
                delay = backoff * (0.5 + random.random())
                error = f"WatchAborted: {self._abort_reason}" if self._abort_reason else self._short(exc)
                self._logger.warning("watch_failed", error=error, retry_in_s=round(delay, 3))
                self._stop.wait(delay)
                backoff = min(backoff * 2, self.settings.backoff_max)
        self._synced = False

    def _list(self) -> None:
        items: dict[tuple[str, str], Lookup] = {}
        cont = ""
        url = self._collection_path(self.settings.namespace)
        started = time.monotonic()
        while True:
            params = {"limit": str(self.settings.page_size)}
            if cont:
                params["continue"] = cont
            else:
                started = time.monotonic()  # the snapshot is the first page's
            resp = self._watch_session.get(
                url, params=params, headers=self.credentials.headers(), timeout=(5.0, self.settings.list_timeout)
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
            if self._stop.is_set():
                raise WatchError("stopped while listing")
        self.install_list(items, str(metadata.get("resourceVersion", "")), confirmed_at=started)

    def _unauthorized(self, resp: requests.Response) -> None:
        if resp.status_code == 401:  # an expired exec credential: fetch a new one before the next call
            self.credentials.unauthorized()

    def install_list(
        self, items: dict[tuple[str, str], Lookup], resource_version: str, confirmed_at: float | None = None
    ) -> None:
        """Replace the cache with a complete list's answers and trust it (the end of a list, whose snapshot is
        the API's state at `confirmed_at`, monotonic; default now)."""
        self._store, self._values = items, values_of(items)
        self._resource_version = resource_version
        self._stream += 1
        self._confirmed_at = time.monotonic() if confirmed_at is None else confirmed_at
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
        # The response head must come as fast as a list page; a quiet stream then sends nothing for minutes, so
        # the stream's own read timeout is long: the prober and TCP keepalive are what notice a dead server.
        resp = self._watch_session.get(
            self._collection_path(self.settings.namespace),
            params=params,
            headers=self.credentials.headers(),
            stream=True,
            timeout=(5.0, self.settings.list_timeout),
        )
        self._metrics.api_calls.inc(verb="watch", code=str(resp.status_code))
        self._unauthorized(resp)
        self._response = resp
        try:
            # A stop() that came while the watch was being opened found no response to close: it would wait for the
            # stream (minutes). Set before this check, the response is closed by any stop() that comes after it.
            if self._stop.is_set() or self._abort_reason:
                return
            if resp.status_code == 410:
                raise WatchGone("watch: HTTP 410")
            if resp.status_code != 200:
                raise WatchError(f"watch JobSets: HTTP {resp.status_code}: {resp.text[:200]}")
            self._stream_socket_options(resp)
            self._stream += 1
            self._synced = True
            for line in resp.iter_lines(chunk_size=None):
                if self._stop.is_set() or self._abort_reason:
                    return
                if line:
                    self._apply(json.loads(line))
        finally:
            self._synced = False  # until the next watch is open, the cache may lag: live GETs
            self._stream += 1
            self._response = None
            resp.close()

    def _stream_socket_options(self, resp: requests.Response) -> None:
        """Long read timeout for the stream, TCP keepalive so that a connection the network dropped ends it."""
        try:
            sock = resp.raw.connection.sock
        except AttributeError:
            return
        if sock is None:
            return
        sock.settimeout(self.settings.watch_timeout_seconds * 1.2 + 30)
        with contextlib.suppress(OSError, AttributeError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, self.settings.keepalive_idle)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, self.settings.keepalive_interval)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)

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

    # ----------------------------------------------------------- prober thread
    def _probe_loop(self) -> None:
        """Confirm the cache while the API answers; abort the stream when it does not (see the module doc)."""
        session = self.credentials.session()
        url = self._collection_path(self.settings.namespace)
        every, within = self.settings.probe_every, self.settings.probe_within
        while not self._stop.is_set():
            sent = time.monotonic()
            stream = self._stream
            if self._synced:
                self._probe(session, url, sent, stream, within)
                if self._synced and time.monotonic() - self._confirmed_at > self.settings.max_staleness:
                    self._abort(f"cache not confirmed for {self.age:.1f}s (bound {self.settings.max_staleness:g}s)")
            self._stop.wait(max(0.0, every - (time.monotonic() - sent)))
        session.close()

    def _probe(self, session: requests.Session, url: str, sent: float, stream: int, within: float) -> None:
        try:
            resp = session.get(url, params={"limit": "1"}, headers=self.credentials.headers(), timeout=within)
        except (requests.RequestException, OSError, KubeAuthError) as exc:
            self._metrics.api_calls.inc(verb="probe", code="error")
            if not self._stop.is_set() and self._stream == stream:
                self._abort(f"the API server did not answer a probe within {within:g}s: {self._short(exc)}")
            return
        self._metrics.api_calls.inc(verb="probe", code=str(resp.status_code))
        self._unauthorized(resp)
        resp.close()
        if resp.status_code == 200 and self._synced and self._stream == stream:
            self._confirmed_at = max(self._confirmed_at, sent)


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


_BEARER = re.compile(r"(?i)\b(bearer)\s+\S+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_MIN_SECRET = 8


def redact(text: str, *secrets: str | None) -> str:
    """`text` with every given secret and anything after `Bearer` replaced, control characters (CR/LF) made
    spaces: an exception message may quote a request header (requests does, for an invalid one)."""
    for secret in secrets:
        # Shorter strings are no real token, and replacing them would mangle the message (a test token "x").
        for part in [secret or "", *_CONTROL.split(secret or "")]:  # quoted whole, split or escaped
            if len(part) >= _MIN_SECRET:
                text = text.replace(part, "[REDACTED]")
    text = _BEARER.sub(r"\1 [REDACTED]", text)
    return _CONTROL.sub(" ", text)
