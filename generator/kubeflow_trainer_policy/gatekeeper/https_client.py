"""Gatekeeper's side of an external data call: one HTTPS POST under ONE deadline for the whole call.

Go's `http.Client{Timeout: t}` (Gatekeeper's client) bounds connect, TLS handshake, request and the
whole response body together. Python's socket timeouts bound each operation instead, so here the
socket's timeout is re-armed to the time left before every read and write, and the connect and the
handshake (one timeout for the whole handshake in CPython's _ssl) get the time left as well.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from kubeflow_trainer_policy.errors import InputError


class CallFailed(Exception):
    """The call did not produce a complete HTTP response in time; the message is one line."""


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; raises TimeoutError once the deadline has passed."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"timeout after {self.seconds:g}s")
        return left

    def expired(self) -> bool:
        return time.monotonic() >= self.at


class DeadlineSSLSocket(ssl.SSLSocket):
    """An SSLSocket that re-arms its timeout to the deadline's time left before every read and write."""

    deadline: Deadline | None = None

    def _arm(self) -> None:
        if self.deadline is not None:
            self.settimeout(self.deadline.remaining())

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._arm()
        return super().recv_into(buffer, nbytes, flags)

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        self._arm()
        return super().recv(buflen, flags)

    def send(self, data: Any, flags: int = 0) -> int:
        self._arm()
        return super().send(data, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        view = memoryview(data).cast("B")
        while view:
            sent = self.send(view, flags)
            view = view[sent:]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def tls_client_context(ca_file: str, client_cert: tuple[str, str] | None = None) -> ssl.SSLContext:
    """TLS 1.3 minimum (as Gatekeeper >= 3.11), the provider verified against `ca_file` including its
    host name, optionally presenting a client certificate. Raises InputError naming a bad file."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.sslsocket_class = DeadlineSSLSocket
    try:
        context.load_verify_locations(cafile=ca_file)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise InputError(str(ca_file), f"not a readable PEM CA bundle: {_one_line(exc)}") from exc
    if client_cert:
        cert, key = client_cert
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise InputError(
                str(cert), f"certificate and key {key} are not a matching PEM pair: {_one_line(exc)}"
            ) from exc
    return context


class _Connection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, context: ssl.SSLContext, deadline: Deadline):
        super().__init__(host, port, context=context)
        self._deadline = deadline
        self._ssl_context = context

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), timeout=self._deadline.remaining())
        try:
            raw.settimeout(self._deadline.remaining())
            tls = self._ssl_context.wrap_socket(raw, server_hostname=self.host)
        except BaseException:
            raw.close()
            raise
        assert isinstance(tls, DeadlineSSLSocket)
        tls.deadline = self._deadline
        self.sock = tls


def split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path?query) of an https:// URL; InputError naming the URL otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise InputError(url, "the provider URL must be https://HOST[:PORT][/PATH]")
    try:
        port = parts.port or 443
    except ValueError as exc:
        raise InputError(url, f"bad port: {exc}") from exc
    return parts.hostname, port, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class DeadlineClient:
    """POSTs JSON to one https:// URL; each call gets a fresh connection, as Gatekeeper's client does."""

    def __init__(self, url: str, context: ssl.SSLContext):
        self.host, self.port, self.target = split_url(url)
        self._context = context

    def post_json(self, body: bytes, timeout: float, max_bytes: int) -> tuple[int, bytes]:
        """(status, body) of the answer; raises CallFailed when no complete answer came within `timeout`."""
        deadline = Deadline(timeout)
        connection = _Connection(self.host, self.port, self._context, deadline)
        try:
            connection.request("POST", self.target, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read(max_bytes + 1)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise CallFailed(f"timeout after {timeout:g}s" if deadline.expired() else _one_line(exc)) from exc
        finally:
            connection.close()
        if len(payload) > max_bytes:
            raise CallFailed(f"response larger than {max_bytes} bytes")
        return response.status, payload
