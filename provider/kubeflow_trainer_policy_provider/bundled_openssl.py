"""TLS 1.3 server sessions over memory buffers, through the OpenSSL that the `cryptography` wheel bundles.

Why not the stdlib `ssl` module, which served before: it links the system's OpenSSL (3.0.19 on the Debian 12
machines where this was measured), whose provider and decoder machinery costs more than the cryptography of a
handshake. Gatekeeper opens a new mTLS connection for every lookup, so that cost is paid per
lookup. Measured 2026-11-26 (P-256 certificates as `trainer-policy certs` issues, TLS 1.3 with mTLS, 10k
JobSets, 10-key requests):
- instructions the provider's process runs per lookup on a new connection (`python -m
  benchmarks.provider_instructions`: callgrind on `provider serve --tls-library stdlib|bundled` under the Go
  load generator, so independent of the machine's load; results/provider_instructions.json): 6.49M with the
  stdlib `ssl` (5.85M of them in OpenSSL 3.0's handshake; decoding the client certificate alone,
  `d2i_X509`, 1.5M) against 4.70M through this module (OpenSSL 4.0.3 from cryptography
  50.0.2; its handshake 4.0M, of which about 2.9M is the signature checks and the key exchange themselves);
  per keep-alive request 242k against 248k (the session's Python methods and cffi calls cost a little more
  than the `ssl` module's C methods);
- lookups/s against the Go stdlib reference provider in the same run (`python -m benchmarks.provider_load
  --rounds 5`, server on one core, the Go load generator on the other, results/provider_load.json): 0.74x
  (rounds 0.64-0.91) through this module against 0.56x (0.49-0.60) for the stdlib stack (`python-at-main`),
  1,273 against 1,718 us of server CPU per lookup (Go: 866 us). Keep-alive: 0.44x against 0.49x, within
  the run's noise (the same code from the watch cache gave 0.47x).
A client that offers the post-quantum hybrid key share X25519MLKEM768 (Go >= 1.24, so recent Gatekeeper
builds, and OpenSSL >= 3.5) gets it from this library, which OpenSSL 3.0 cannot give; the handshake still
costs the server less than OpenSSL 3.0's with X25519 (783-855 against 1,020-1,248 us per handshake,
sans-I/O against an OpenSSL 4.0 client, 2026-11-26). The benchmarks' Go 1.19 load generator offers X25519.
pyOpenSSL offers the same library, but its per-call Python wrappers made keep-alive requests 20-35 us dearer
(a prototype of this server on it); this module calls the bindings directly, one cffi call per operation.

The bindings are `cryptography.hazmat.bindings.openssl.binding.Binding` (its documented `ffi` and `lib`, on
which pyOpenSSL is built). If an installed `cryptography` lacks a function used here, `UNAVAILABLE` says
which, and the provider serves through the stdlib `ssl` module instead (kubeflow_trainer_policy_provider.tls).

Errors are the stdlib's exception classes (`ssl.SSLWantReadError`, `ssl.SSLZeroReturnError`, `ssl.SSLError`),
so the server handles both libraries alike. OpenSSL's error queue is per thread: every failure drains it, so
one connection's error never shows up in the next connection's result.
"""

from __future__ import annotations

import ssl
from typing import Any

REQUIRED = (
    "TLS_server_method",
    "SSL_CTX_new",
    "SSL_CTX_free",
    "SSL_CTX_set_min_proto_version",
    "SSL_CTX_set_max_proto_version",
    "SSL_CTX_set_options",
    "SSL_CTX_set_session_cache_mode",
    "SSL_CTX_use_certificate_chain_file",
    "SSL_CTX_use_PrivateKey_file",
    "SSL_CTX_check_private_key",
    "SSL_CTX_load_verify_locations",
    "SSL_CTX_set_verify",
    "SSL_new",
    "SSL_free",
    "SSL_set_bio",
    "SSL_set_accept_state",
    "SSL_do_handshake",
    "SSL_read",
    "SSL_write",
    "SSL_pending",
    "SSL_shutdown",
    "SSL_get_error",
    "SSL_get_verify_result",
    "X509_verify_cert_error_string",
    "BIO_new",
    "BIO_s_mem",
    "BIO_write",
    "BIO_read",
    "BIO_get_mem_data",
    "ERR_get_error",
    "ERR_clear_error",
    "ERR_lib_error_string",
    "ERR_reason_error_string",
    "OpenSSL_version",
    "TLS1_3_VERSION",
    "SSL_OP_NO_TICKET",
    "SSL_SESS_CACHE_OFF",
    "SSL_VERIFY_PEER",
    "SSL_VERIFY_FAIL_IF_NO_PEER_CERT",
    "SSL_FILETYPE_PEM",
    "SSL_ERROR_WANT_READ",
    "SSL_ERROR_ZERO_RETURN",
    "SSL_ERROR_SYSCALL",
    "X509_V_OK",
)

RECORD_BYTES = 16384
"""The most plaintext one TLS record carries, so the most one SSL_read returns."""


def _load() -> tuple[Any, Any, str | None]:
    try:
        from cryptography.hazmat.bindings.openssl.binding import Binding
    except ImportError as exc:  # pragma: no cover - cryptography is a dependency
        return None, None, f"cryptography's OpenSSL bindings do not import: {exc}"
    binding = Binding()
    missing = [name for name in REQUIRED if not hasattr(binding.lib, name)]
    if missing:
        return None, None, f"cryptography's OpenSSL bindings lack {', '.join(missing)}"
    return binding.ffi, binding.lib, None


ffi, lib, UNAVAILABLE = _load()
"""`UNAVAILABLE` is None when this module can serve, else why it cannot."""


def version() -> str:
    return ffi.string(lib.OpenSSL_version(0)).decode() if lib is not None else ""


def _queued_errors() -> list[str]:
    found = []
    while code := lib.ERR_get_error():
        library, reason = lib.ERR_lib_error_string(code), lib.ERR_reason_error_string(code)
        text = ffi.string(reason).decode(errors="replace") if reason else f"error {code:#x}"
        found.append(f"{ffi.string(library).decode(errors='replace')}: {text}" if library else text)
    return found


def _error(problem: str) -> ssl.SSLError:
    found = _queued_errors()
    return ssl.SSLError(f"{problem}: {'; '.join(found)}" if found else problem)


class BundledContext:
    """One serving certificate, key and (for mTLS) client CA, loaded once; `new_session` per connection."""

    def __init__(self, cert_file: str, key_file: str, client_ca_file: str | None) -> None:
        if UNAVAILABLE is not None:
            raise RuntimeError(UNAVAILABLE)
        lib.ERR_clear_error()
        context = lib.SSL_CTX_new(lib.TLS_server_method())
        if context == ffi.NULL:
            raise _error("cannot create an OpenSSL context")
        self._context = ffi.gc(context, lib.SSL_CTX_free)
        if not (
            lib.SSL_CTX_set_min_proto_version(context, lib.TLS1_3_VERSION)
            and lib.SSL_CTX_set_max_proto_version(context, lib.TLS1_3_VERSION)
        ):
            raise _error("cannot restrict the context to TLS 1.3")
        # Gatekeeper builds a new client per lookup and never resumes a session: tickets would be wasted work.
        lib.SSL_CTX_set_options(context, lib.SSL_OP_NO_TICKET)
        lib.SSL_CTX_set_session_cache_mode(context, lib.SSL_SESS_CACHE_OFF)
        if lib.SSL_CTX_use_certificate_chain_file(context, cert_file.encode()) != 1:
            raise _error(f"{cert_file}: cannot load the certificate chain")
        if lib.SSL_CTX_use_PrivateKey_file(context, key_file.encode(), lib.SSL_FILETYPE_PEM) != 1:
            raise _error(f"{key_file}: cannot load the private key")
        if lib.SSL_CTX_check_private_key(context) != 1:
            raise _error(f"{key_file} is not the key of {cert_file}")
        if client_ca_file:
            if lib.SSL_CTX_load_verify_locations(context, client_ca_file.encode(), ffi.NULL) != 1:
                raise _error(f"{client_ca_file}: cannot load the client CA")
            mode = lib.SSL_VERIFY_PEER | lib.SSL_VERIFY_FAIL_IF_NO_PEER_CERT
            lib.SSL_CTX_set_verify(context, mode, ffi.NULL)

    @property
    def library(self) -> str:
        return f"cryptography's bundled OpenSSL ({version()})"

    def new_session(self) -> BundledSession:
        return BundledSession(self._context)


_SSL_do_handshake, _SSL_read, _SSL_write, _SSL_pending = (
    (lib.SSL_do_handshake, lib.SSL_read, lib.SSL_write, lib.SSL_pending) if lib is not None else (None,) * 4
)
_BIO_write, _BIO_read, _BIO_get_mem_data = (
    (lib.BIO_write, lib.BIO_read, lib.BIO_get_mem_data) if lib is not None else (None,) * 3
)
_buffer = ffi.new_allocator(should_clear_after_alloc=False) if ffi is not None else None


class BundledSession:
    """The server side of one TLS connection: bytes from the client go in with `feed`, bytes for the client
    come out of `take_output`."""

    __slots__ = ("_incoming", "_outgoing", "_ssl")

    def __init__(self, context: Any) -> None:
        pointer = lib.SSL_new(context)  # holds a reference to the context: a reload cannot free it under us
        if pointer == ffi.NULL:
            raise _error("cannot create a TLS session")
        self._ssl = ffi.gc(pointer, lib.SSL_free)  # SSL_free frees both BIOs too
        self._incoming = lib.BIO_new(lib.BIO_s_mem())
        self._outgoing = lib.BIO_new(lib.BIO_s_mem())
        if self._incoming == ffi.NULL or self._outgoing == ffi.NULL:
            raise MemoryError("cannot create the TLS session's buffers")
        lib.SSL_set_bio(pointer, self._incoming, self._outgoing)
        lib.SSL_set_accept_state(pointer)

    def feed(self, data: bytes) -> None:
        _BIO_write(self._incoming, data, len(data))

    def do_handshake(self) -> None:
        lib.ERR_clear_error()
        result = _SSL_do_handshake(self._ssl)
        if result != 1:
            self._raise(result, "TLS handshake failed")

    def read(self, size: int) -> bytes:
        size = min(size, RECORD_BYTES)
        buffer = _buffer("char[]", size)
        result = _SSL_read(self._ssl, buffer, size)
        if result <= 0:
            self._raise(result, "TLS read failed")
        return ffi.unpack(buffer, result)

    def has_unread(self) -> bool:
        """Received bytes not yet decrypted, or decrypted bytes not yet read."""
        return bool(_BIO_get_mem_data(self._incoming, ffi.NULL) or _SSL_pending(self._ssl))

    def write(self, data: bytes) -> None:
        if not data:
            return
        result = _SSL_write(self._ssl, data, len(data))
        if result <= 0:
            self._raise(result, "TLS write failed")

    def take_output(self) -> bytes:
        pending = _BIO_get_mem_data(self._outgoing, ffi.NULL)
        if not pending:
            return b""
        buffer = _buffer("char[]", pending)
        return ffi.unpack(buffer, _BIO_read(self._outgoing, buffer, pending))

    def unwrap(self) -> None:
        """Send close_notify (the peer's own close_notify is not waited for)."""
        if lib.SSL_shutdown(self._ssl) < 0:
            _queued_errors()

    def _raise(self, result: int, problem: str) -> None:
        error = lib.SSL_get_error(self._ssl, result)
        if error == lib.SSL_ERROR_WANT_READ:
            raise ssl.SSLWantReadError("the TLS session needs more bytes from the peer")
        if error == lib.SSL_ERROR_ZERO_RETURN:
            _queued_errors()
            raise ssl.SSLZeroReturnError("the peer closed the TLS session")
        verify = lib.SSL_get_verify_result(self._ssl)
        found = _queued_errors()
        if verify != lib.X509_V_OK:
            reason = ffi.string(lib.X509_verify_cert_error_string(verify)).decode(errors="replace")
            found.append(f"certificate verify failed: {reason}")
        if error == lib.SSL_ERROR_SYSCALL and not found:
            raise ssl.SSLEOFError(f"{problem}: the peer's bytes ended")
        raise ssl.SSLError(f"{problem}: {'; '.join(found) or f'SSL error {error}'}")
