"""The provider's handler served by granian (Rust: hyper + rustls), a candidate stack for the load benchmark.

Not a shipped server: benchmarks/provider_load.py runs it as `granian --interface wsgi|rsgi
benchmarks.granian_provider:wsgi|rsgi` with the same certificates (TLS 1.3, mTLS via --ssl-ca and
--ssl-client-verify) and the same JobSets (`PROVIDER_BENCH_DATA`, a JSON List) to see what a Rust
HTTP/TLS stack would give. benchmarks/granian_guarantees.py checks which of the provider's connection
guarantees it keeps (provider/kubeflow_trainer_policy_provider/http_server.py gives the outcome).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy_provider.handler import ProviderHandler, provider_response
from kubeflow_trainer_policy_provider.sources import StaticJobSetSource

HANDLER = ProviderHandler(StaticJobSetSource(json.loads(Path(os.environ["PROVIDER_BENCH_DATA"]).read_text())["items"]))
JSON = ("content-type", "application/json")


def _answer(body: bytes) -> tuple[int, bytes]:
    try:
        document = json.loads(body.decode())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        error = f"request body is not valid JSON: {str(exc)[:200]}"
        return 400, json.dumps(provider_response([], system_error=error)).encode()
    return 200, HANDLER.answer(document).body


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    status, body = _answer(environ["wsgi.input"].read())
    start_response(f"{status} {'OK' if status == 200 else 'Bad Request'}", [JSON, ("content-length", str(len(body)))])
    return [body]


async def rsgi(scope: Any, protocol: Callable[[], Awaitable[bytes]]) -> None:
    status, body = _answer(await protocol())
    protocol.response_bytes(status, [JSON], body)  # type: ignore[attr-defined]
