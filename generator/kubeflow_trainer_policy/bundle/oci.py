"""Bundles as OCI artifacts, in the layout OPA's OCI downloader reads (open-policy-agent/opa,
download/oci_download.go): an image manifest whose FIRST layer of media type
`application/vnd.oci.image.layer.v1.tar+gzip` is the bundle tarball (OPA takes that one, and its
digest as the bundle's ETag), with a config of media type `application/vnd.oci.image.config.v1+json`.

The registry protocol is oras-py's. Two things are set around it: its request retry (five attempts
with 3**n s sleeps, over two minutes before a refused connection is reported) is left out, so a
command fails at once; and its log lines are silenced, so a failure is one line from the CLI.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import oras.container
import oras.provider
import requests
from oras.logger import logger as oras_logger

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
MAX_LAYER_BYTES = 64 * 1024 * 1024
"""Default cap on the bundle layer's declared and actual size (`bundle pull --max-layer-bytes`)."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""An OCI manifest is a few hundred bytes; the registries' own cap is 4 MiB."""
CHUNK_BYTES = 64 * 1024

oras_logger.set_level(logging.CRITICAL + 1)


class RegistryError(Exception):
    """The registry refused, failed or answered something that is not an OPA bundle artifact."""


@dataclass(frozen=True)
class RegistryOptions:
    plain_http: bool = False
    """Talk HTTP, not HTTPS (a registry on 127.0.0.1 without TLS)."""
    ca_file: str | None = None
    """CA bundle that signed the registry's certificate (default: the system's)."""
    username: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class PushResult:
    reference: str
    manifest_digest: str
    layer_digest: str
    size: int


@dataclass(frozen=True)
class PullResult:
    reference: str
    manifest_digest: str
    layer_digest: str
    content: bytes


class _Registry(oras.provider.Registry):
    do_request = getattr(oras.provider.Registry.do_request, "__wrapped__", oras.provider.Registry.do_request)


def _client(reference: str, options: RegistryOptions) -> tuple[_Registry, oras.container.Container]:
    try:
        container = oras.container.Container(reference)
    except ValueError as exc:
        raise RegistryError(f"not an OCI reference (host[:port]/repository[:tag|@digest]): {exc}") from exc
    verify: bool | str = options.ca_file or True
    backend = _auth_backend(container.registry, options, verify)
    registry = _Registry(
        hostname=container.registry, insecure=options.plain_http, tls_verify=verify, auth_backend=backend
    )
    registry.session.trust_env = False
    registry.auth.session.trust_env = False
    if options.username is not None:
        registry.auth.set_basic_auth(options.username, options.password or "")
    return registry, container


def _auth_backend(host: str, options: RegistryOptions, verify: bool | str) -> str:
    """`basic` for registries that challenge with Basic (htpasswd), else `token` (Bearer token service)."""
    scheme = "http" if options.plain_http else "https"
    with requests.Session() as session:
        session.trust_env = False
        response = _call(lambda: session.get(f"{scheme}://{host}/v2/", verify=verify, timeout=30))
    challenge = response.headers.get("WWW-Authenticate", "")
    if not challenge.lower().startswith("basic"):
        return "token"
    if options.username is None:
        raise RegistryError(f"{host} requires a login (HTTP Basic): give --username and --password-file")
    with requests.Session() as session:
        session.trust_env = False
        auth = (options.username, options.password or "")
        login = _call(lambda: session.get(f"{scheme}://{host}/v2/", verify=verify, timeout=30, auth=auth))
    if login.status_code == 401:
        raise RegistryError(f"{host} refused the login of {options.username!r} (HTTP 401): wrong user or password")
    return "basic"


def _call(request: Any) -> Any:
    try:
        return request()
    except requests.exceptions.SSLError as exc:
        raise RegistryError(f"TLS failed: {_reason(exc)} (pass --ca-file, or --plain-http for HTTP)") from exc
    except requests.exceptions.RequestException as exc:
        raise RegistryError(f"cannot reach the registry: {_reason(exc)}") from exc
    except ValueError as exc:
        raise RegistryError(" ".join(str(exc).split())) from exc


def _reason(exc: Exception) -> str:
    text = str(exc)
    for marker in ("Errno", "certificate verify failed", "Connection refused", "Max retries"):
        if marker in text:
            text = text[text.index(marker) :]
            break
    return " ".join(text.split())[:300]


def _check(response: requests.Response, what: str) -> None:
    if response.status_code in (200, 201, 202):
        return
    detail = ""
    try:
        errors = response.json().get("errors") or []
        detail = "; ".join(str(e.get("message") or e.get("code")) for e in errors if isinstance(e, dict))
    except (ValueError, AttributeError):
        detail = response.text.strip()[:200]
    if response.status_code == 401:
        detail = (detail + "; " if detail else "") + "give --username and --password-file (or fix them)"
    raise RegistryError(f"{what}: HTTP {response.status_code} {response.reason}" + (f": {detail}" if detail else ""))


def push(bundle: Path, reference: str, options: RegistryOptions) -> PushResult:
    """Upload the bundle as the artifact's one layer and tag the manifest with the reference."""
    registry, container = _client(reference, options)
    content = bundle.read_bytes()
    with tempfile.TemporaryDirectory(prefix="trainer-policy-oci-") as tmp:
        config = Path(tmp) / "config.json"
        config.write_bytes(b"{}")
        response = _call(
            lambda: registry.push(
                target=container,  # type: ignore[arg-type]
                files=[f"{bundle}:{LAYER_MEDIA_TYPE}"],
                manifest_config=f"{config}:{CONFIG_MEDIA_TYPE}",
                disable_path_validation=True,
                quiet=True,
            )
        )
    _check(response, f"push {reference}")
    digest = response.headers.get("Docker-Content-Digest", "")
    return PushResult(reference, digest, "sha256:" + hashlib.sha256(content).hexdigest(), len(content))


def pull(reference: str, options: RegistryOptions, max_layer_bytes: int = MAX_LAYER_BYTES) -> PullResult:
    """The bundle tarball: the first tar+gzip layer, as OPA picks it, checked against its digest. The manifest's
    declared layer size is trusted only up to `max_layer_bytes`, and the download stops as soon as it exceeds the
    declared size: memory holds at most that many bytes, whatever the registry sends."""
    registry, container = _client(reference, options)
    registry.auth.load_configs(container)
    url = f"{registry.prefix}://{container.manifest_url()}"
    response = _call(lambda: registry.do_request(url, "GET", headers={"Accept": MANIFEST_MEDIA_TYPE}, stream=True))
    with response:
        _check(response, f"get manifest {reference}")
        raw = _read_capped(response, MAX_MANIFEST_BYTES, "the manifest")
    manifest_digest = response.headers.get("Docker-Content-Digest") or "sha256:" + hashlib.sha256(raw).hexdigest()
    layer = _bundle_layer(raw)
    declared = layer.get("size")
    if isinstance(declared, bool) or not isinstance(declared, int) or declared < 0:
        raise RegistryError(f"the bundle layer declares no size (got {declared!r})")
    if declared > max_layer_bytes:
        raise RegistryError(
            f"layer {layer['digest']} declares {declared} bytes, over the limit of {max_layer_bytes} "
            "(--max-layer-bytes or TRAINER_POLICY_BUNDLE_LAYER_BYTES)"
        )
    blob = _call(lambda: registry.get_blob(container, layer["digest"], stream=True))
    with blob:
        _check(blob, f"get layer {layer['digest']}")
        content = _read_capped(blob, declared, f"layer {layer['digest']} (declared {declared} bytes)")
    if len(content) != declared:
        raise RegistryError(f"layer {layer['digest']} is {len(content)} bytes, the manifest declares {declared}")
    actual = "sha256:" + hashlib.sha256(content).hexdigest()
    if actual != layer["digest"]:
        raise RegistryError(f"layer digest mismatch: the manifest says {layer['digest']}, the content is {actual}")
    return PullResult(reference, manifest_digest, actual, content)


def _read_capped(response: requests.Response, limit: int, what: str) -> bytes:
    """The body, read in chunks and refused once it passes `limit` bytes (a lying Content-Length changes nothing)."""
    body = bytearray()
    try:
        for chunk in response.iter_content(chunk_size=CHUNK_BYTES):
            body += chunk
            if len(body) > limit:
                raise RegistryError(f"{what}: the registry sent more than {limit} bytes")
    except requests.exceptions.RequestException as exc:
        raise RegistryError(f"{what}: download failed: {_reason(exc)}") from exc
    return bytes(body)


def _bundle_layer(raw: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise RegistryError("the manifest is not JSON") from exc
    media_type = manifest.get("mediaType") if isinstance(manifest, dict) else None
    if media_type not in (MANIFEST_MEDIA_TYPE, None) or not isinstance(manifest.get("layers"), list):
        raise RegistryError(f"not an OCI image manifest (mediaType {media_type!r}); OPA reads only those")
    for layer in manifest["layers"]:
        if isinstance(layer, dict) and layer.get("mediaType") == LAYER_MEDIA_TYPE:
            digest = layer.get("digest")
            if not isinstance(digest, str) or not digest.startswith("sha256:"):
                raise RegistryError(f"the bundle layer has no sha256 digest: {digest!r}")
            return layer
    raise RegistryError(f"no layer of media type {LAYER_MEDIA_TYPE}: this artifact is not an OPA bundle")
