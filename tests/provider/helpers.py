"""Small clients for the provider's tests: Gatekeeper's request, raw TLS sockets, polling."""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import requests

API_VERSION = "externaldata.gatekeeper.sh/v1beta1"


def provider_request(keys: list[str]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ProviderRequest", "request": {"keys": keys}}


def client_context(ca: str, cert: tuple[str, str] | None = None, tls12: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca)
    if tls12:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    else:
        context.minimum_version = ssl.TLSVersion.TLSv1_3
    if cert:
        context.load_cert_chain(*cert)
    return context


def session(ca: str, cert: tuple[str, str] | None = None) -> requests.Session:
    s = requests.Session()
    s.trust_env = False
    s.verify = ca
    s.cert = cert
    return s


def post(s: requests.Session, url: str, keys: list[str]) -> dict[str, Any]:
    response = s.post(url, json=provider_request(keys), timeout=5)
    assert response.status_code == 200, response.text
    return response.json()


def items(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["key"]: item for item in body["response"]["items"]}


def raw_exchange(port: int, ca: str, payload: bytes, read_timeout: float = 5.0) -> bytes:
    """Send raw bytes over TLS 1.3 and read until the server closes or the response is complete."""
    context = client_context(ca)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(payload)
        data = b""
        while True:
            try:
                chunk = tls.recv(65536)
            except (TimeoutError, ssl.SSLError, ConnectionResetError):
                break
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                length = [
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ]
                if length and len(body) >= length[0]:
                    break
        return data


def status_and_json(raw: bytes) -> tuple[int, Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body) if body.startswith(b"{") else body


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> float:
    """Seconds until `predicate()` held; raises AssertionError after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")
