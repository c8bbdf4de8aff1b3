"""Server CPU of one TLS 1.3 connection (handshake + one request and answer) by TLS library, key type and option.

In-process and sans-I/O: a stdlib `ssl` client (with its client certificate when mTLS) talks to each server
library through memory buffers, and only the server's calls are timed, so this isolates what the provider's
TLS library costs per Gatekeeper lookup (a new connection each time) from sockets and the event loop.
Variants are measured in alternating rounds (median, min, max of the per-round means), pinned to one core.

Server libraries: `openssl-3.0` (the provider's own session, provider.tls: the stdlib `ssl` over the system's
OpenSSL), `openssl-4` (pyOpenSSL over the OpenSSL that the `cryptography` wheel bundles), `rustls` (the `rtls`
package; its server side has no client certificate verification, so it runs server-auth only: it cannot serve
the provider's mTLS).
Key types: ECDSA P-256 (what `trainer-policy certs` issues), RSA 2048, Ed25519; every certificate of a PKI
(CAs, serving, client) is of that type.

    python -m benchmarks.tls_handshake [--connections 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import os
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from benchmarks.common import write_result
from kubeflow_trainer_policy_provider.tls import ServerSession

KEY_TYPES = ("p256", "rsa2048", "ed25519")
REQUEST = b"POST / HTTP/1.1\r\nHost: provider\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"


# ------------------------------------------------------------------------------------------- PKI
def _key(kind: str) -> Any:
    if kind == "p256":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "rsa2048":
        return rsa.generate_private_key(65537, 2048)
    return ed25519.Ed25519PrivateKey.generate()


def _cert(key: Any, name: str, issuer_key: Any, issuer: str, *, ca: bool, usage: Any = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if usage == ExtendedKeyUsageOID.SERVER_AUTH:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName("provider")]), critical=False)
    algorithm = None if isinstance(issuer_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(issuer_key, algorithm)


@dataclass(frozen=True)
class PKI:
    ca: str
    cert: str
    key: str
    client_ca: str
    client_cert: str
    client_key: str


def make_pki(directory: Path, kind: str) -> PKI:
    ca_key, client_ca_key, key, client_key = (_key(kind) for _ in range(4))
    files = {
        "ca": _cert(ca_key, "ca", ca_key, "ca", ca=True),
        "client_ca": _cert(client_ca_key, "client-ca", client_ca_key, "client-ca", ca=True),
        "cert": _cert(key, "provider", ca_key, "ca", ca=False, usage=ExtendedKeyUsageOID.SERVER_AUTH),
        "client_cert": _cert(
            client_key, "gk", client_ca_key, "client-ca", ca=False, usage=ExtendedKeyUsageOID.CLIENT_AUTH
        ),
    }
    paths = {}
    for name, cert in files.items():
        paths[name] = directory / f"{kind}-{name}.crt"
        paths[name].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    for name, private in (("key", key), ("client_key", client_key)):
        paths[name] = directory / f"{kind}-{name}.key"
        paths[name].write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return PKI(**{name: str(path) for name, path in paths.items()})


# ---------------------------------------------------------------------------------------- servers
class Server:
    """One server-side TLS connection over memory buffers; `feed` takes the client's bytes, returns the server's."""

    def feed(self, data: bytes) -> bytes:
        raise NotImplementedError

    @property
    def answered(self) -> bool:
        raise NotImplementedError


class SessionServer(Server):
    """One server-side connection through the provider's session (provider.tls): `ServerSession` over an
    `ssl.SSLContext` (or rtls's, which takes the same memory BIOs)."""

    def __init__(self, session: Any):
        self.tls = session
        self.done = False
        self.sent = False

    def feed(self, data: bytes) -> bytes:
        self.tls.feed(data)
        if not self.done:
            try:
                self.tls.do_handshake()
                self.done = True
            except ssl.SSLWantReadError:
                pass
        if self.done and not self.sent:
            try:
                if self.tls.read(65536) == REQUEST:
                    self.tls.write(ANSWER)
                    self.sent = True
            except ssl.SSLWantReadError:
                pass
        return self.tls.take_output()

    @property
    def answered(self) -> bool:
        return self.sent


class PyOpenSSLServer(Server):
    def __init__(self, context: Any):
        from OpenSSL import SSL

        self.ssl = SSL
        self.tls = SSL.Connection(context, None)
        self.tls.set_accept_state()
        self.done = False
        self.sent = False

    def feed(self, data: bytes) -> bytes:
        want = self.ssl.WantReadError
        self.tls.bio_write(data)
        if not self.done:
            try:
                self.tls.do_handshake()
                self.done = True
            except want:
                pass
        if self.done and not self.sent:
            try:
                if self.tls.recv(65536) == REQUEST:
                    self.tls.sendall(ANSWER)
                    self.sent = True
            except want:
                pass
        out = b""
        while True:
            try:
                out += self.tls.bio_read(65536)
            except want:
                return out

    @property
    def answered(self) -> bool:
        return self.sent


def stdlib_factory(pki: PKI, mtls: bool, tickets: int = 0) -> Callable[[], Server]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(pki.cert, pki.key)
    context.num_tickets = tickets
    if mtls:
        context.load_verify_locations(cafile=pki.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return lambda: SessionServer(ServerSession(context))


def rustls_factory(pki: PKI, mtls: bool) -> Callable[[], Server]:
    import rtls

    if mtls:
        raise ValueError("rtls's server does not verify client certificates")
    context = rtls.SSLContext(rtls.PROTOCOL_TLS_SERVER)
    context.minimum_version = context.maximum_version = rtls.TLSVersion.TLSv1_3
    context.load_cert_chain(pki.cert, pki.key)
    return lambda: SessionServer(ServerSession(context))


def pyopenssl_factory(pki: PKI, mtls: bool) -> Callable[[], Server]:
    from OpenSSL import SSL

    context = SSL.Context(SSL.TLS_SERVER_METHOD)
    context.set_min_proto_version(SSL.TLS1_3_VERSION)
    context.set_max_proto_version(SSL.TLS1_3_VERSION)
    context.use_certificate_chain_file(pki.cert)
    context.use_privatekey_file(pki.key)
    context.set_options(SSL.OP_NO_TICKET)
    context.set_session_cache_mode(SSL.SESS_CACHE_OFF)
    if mtls:
        context.load_verify_locations(pki.client_ca)
        context.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT)
    return lambda: PyOpenSSLServer(context)


# ------------------------------------------------------------------------------------ measurement
def client_context(pki: PKI, mtls: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_verify_locations(cafile=pki.ca)
    if mtls:
        context.load_cert_chain(pki.client_cert, pki.client_key)
    return context


def one_connection(new_server: Callable[[], Server], client: ssl.SSLContext) -> float:
    """Seconds the server spent on one connection: handshake, the request, the answer."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client.wrap_bio(incoming, outgoing, server_hostname="provider")
    started = time.perf_counter()
    server = new_server()
    spent = time.perf_counter() - started
    handshaken = requested = False
    answer = b""
    for _ in range(20):
        if not handshaken:
            try:
                tls.do_handshake()
                handshaken = True
            except ssl.SSLWantReadError:
                pass
        if handshaken and not requested:
            tls.write(REQUEST)
            requested = True
        started = time.perf_counter()
        reply = server.feed(outgoing.read())
        spent += time.perf_counter() - started
        incoming.write(reply)
        if server.answered:
            with contextlib.suppress(ssl.SSLWantReadError):
                answer += tls.read(65536)
            if answer == ANSWER:
                return spent
    raise RuntimeError("the connection did not complete")


def measure(variants: dict[str, tuple[Callable[[], Server], ssl.SSLContext]], connections: int, rounds: int):
    means: dict[str, list[float]] = {name: [] for name in variants}
    for factory, client in variants.values():  # warm-up, and proof that each variant works
        for _ in range(10):
            one_connection(factory, client)
    for _ in range(rounds):
        for name, (factory, client) in variants.items():
            total = sum(one_connection(factory, client) for _ in range(connections))
            means[name].append(total / connections * 1e6)
    return {
        name: {
            "server_us_per_connection": {
                "median": round(statistics.median(values), 1),
                "min": round(min(values), 1),
                "max": round(max(values), 1),
            }
        }
        for name, values in means.items()
    }


def variants(directory: Path) -> tuple[dict[str, tuple[Callable[[], Server], ssl.SSLContext]], list[str]]:
    found: dict[str, tuple[Callable[[], Server], ssl.SSLContext]] = {}
    missing = []
    have_pyopenssl = importlib.util.find_spec("OpenSSL") is not None
    have_rtls = importlib.util.find_spec("rtls") is not None
    for kind in KEY_TYPES:
        pki = make_pki(directory, kind)
        for mtls in (True, False):
            auth = "mtls" if mtls else "server-auth"
            client = client_context(pki, mtls)
            found[f"openssl-3.0/{kind}/{auth}"] = (stdlib_factory(pki, mtls), client)
            if kind == "p256":
                found[f"openssl-3.0/{kind}/{auth}/2-tickets"] = (stdlib_factory(pki, mtls, tickets=2), client)
            if have_pyopenssl:
                found[f"openssl-4/{kind}/{auth}"] = (pyopenssl_factory(pki, mtls), client)
            if have_rtls and not mtls:
                found[f"rustls/{kind}/{auth}"] = (rustls_factory(pki, mtls), client)
    if not have_pyopenssl:
        missing.append("openssl-4 (pip install pyopenssl: the bench extra)")
    if not have_rtls:
        missing.append("rustls (pip install rtls: the bench extra)")
    return found, missing


def library_versions() -> dict[str, str]:
    versions = {"openssl-3.0": ssl.OPENSSL_VERSION}
    if importlib.util.find_spec("OpenSSL") is not None:
        from OpenSSL import SSL

        versions["openssl-4"] = SSL.OpenSSL_version(SSL.OPENSSL_VERSION).decode()
    if importlib.util.find_spec("rtls") is not None:
        from importlib.metadata import version

        versions["rustls"] = f"rtls {version('rtls')}"
    return versions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=200, help="connections per variant per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {0})
    with tempfile.TemporaryDirectory(prefix="ktp-tls-bench-") as work:
        found, missing = variants(Path(work))
        results = measure(found, args.connections, args.rounds)
    path = write_result(
        "tls_handshake",
        {
            "results": results,
            "not_measured": missing,
            "libraries": library_versions(),
            "setup": {
                "connections_per_round": args.connections,
                "rounds": args.rounds,
                "pinned_cpu": 0,
                "what": "server-side seconds per TLS 1.3 connection (handshake + one request/answer), sans-I/O",
                "machine_note": "2 cores shared with other agents' work: compare variants within this run",
            },
        },
    )
    for name, value in sorted(results.items()):
        print(f"  {name:42} {value['server_us_per_connection']}")
    print(f"-> {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
