"""A registry that lies, on a real socket: the OCI distribution endpoints `bundle pull` calls, answering a manifest
and a blob the test chooses (a layer size that is not the truth, a blob that never ends). A real registry cannot
be made to lie, so this one speaks the same HTTP; it is a hostile peer, not a model of docker-registry."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CHUNK = b"\0" * 65536


@dataclass
class Lies:
    """What the registry answers: the real blob, the size the manifest declares for it, and whether the blob's
    body goes on forever after the real bytes."""

    blob: bytes
    declared_size: int | None = None
    endless: bool = False
    sent: list[int] = field(default_factory=lambda: [0])

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.blob).hexdigest()

    def manifest(self) -> bytes:
        size = len(self.blob) if self.declared_size is None else self.declared_size
        body = {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": {"mediaType": CONFIG, "digest": "sha256:" + hashlib.sha256(b"{}").hexdigest(), "size": 2},
            "layers": [{"mediaType": LAYER, "digest": self.digest, "size": size}],
        }
        return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    lies: Lies

    def do_GET(self) -> None:
        if self.path == "/v2/":
            self._send(200, b"{}", "application/json")
        elif "/manifests/" in self.path:
            self._send(200, self.lies.manifest(), MANIFEST)
        elif "/blobs/" in self.path:
            self._blob()
        else:
            self._send(404, b"{}", "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _blob(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for piece in self._pieces():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.lies.sent[0] += len(piece)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what it should do

    def _pieces(self) -> Iterator[bytes]:
        yield self.lies.blob
        while self.lies.endless:
            yield CHUNK

    def log_message(self, format: str, *args: object) -> None:
        pass


class LyingRegistry:
    def __init__(self, lies: Lies):
        handler = type("Handler", (_Handler,), {"lies": lies})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.lies = lies

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> LyingRegistry:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
