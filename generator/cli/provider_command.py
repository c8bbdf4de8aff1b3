"""`trainer-policy provider serve`: the external data provider for JobSet state over HTTPS."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from generator.errors import InputError
from generator.gatekeeper.documents import read_documents
from provider.handler import MAX_KEYS
from provider.http_server import (
    HANDSHAKE_TIMEOUT_SECONDS,
    IDLE_TIMEOUT_SECONDS,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    READ_TIMEOUT_SECONDS,
    InvalidSetting,
    Limits,
)
from provider.kube_auth import KubeAuthError, KubeCredentials, from_kubeconfig, in_cluster
from provider.kube_source import KubeJobSetSource, WatchSettings
from provider.logs import JsonLogger
from provider.metrics import ProviderMetrics
from provider.server import DEFAULT_REQUEST_TIMEOUT, ProviderServer, ServeConfig
from provider.sources import JobSetSource, StaticJobSetSource
from provider.tls import TLSFiles


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "provider",
        help="run the external data provider (JobSet state for Gatekeeper)",
        description="Gatekeeper external data provider answering <namespace>/<name> keys with JobSet state.",
    )
    commands = parser.add_subparsers(dest="provider_command", required=True, metavar="SUBCOMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve ProviderRequests over HTTPS (TLS 1.3 only)",
        description=(
            "Serve externaldata.gatekeeper.sh/v1beta1 ProviderRequests over HTTPS (TLS 1.3 only), with /healthz, "
            "/readyz and /metrics. JobSets come from the Kubernetes API (list+watch cache; in-cluster service "
            "account by default, or --kubeconfig) or, offline, from --objects files. Logs are JSON lines on stderr."
        ),
    )
    serve.add_argument("--listen", default="0.0.0.0:8443", help="HOST:PORT for HTTPS (default %(default)s)")
    serve.add_argument("--health-port", type=int, help="also serve /healthz, /readyz, /metrics over plain HTTP here")
    serve.add_argument("--tls-cert", required=True, help="serving certificate (PEM); reloaded when it changes")
    serve.add_argument("--tls-key", required=True, help="key of --tls-cert (PEM); reloaded when it changes")
    serve.add_argument("--client-ca", help="require client certificates signed by this CA (mTLS; Gatekeeper's CA)")
    source = serve.add_mutually_exclusive_group()
    source.add_argument(
        "--objects", nargs="+", action="extend", metavar="FILE", help="static JobSets from YAML/JSON files (offline)"
    )
    source.add_argument("--kubeconfig", help="reach the API with this kubeconfig instead of the service account")
    serve.add_argument("--context", help="kubeconfig context (default: current-context)")
    serve.add_argument("--namespace", help="watch JobSets in this namespace only (default: all namespaces)")
    serve.add_argument("--max-keys", type=int, default=MAX_KEYS, help="keys per request (default %(default)s)")
    serve.add_argument(
        "--max-body-bytes", type=int, default=MAX_BODY_BYTES, help="request body cap (default %(default)s)"
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=DEFAULT_REQUEST_TIMEOUT,
        help="seconds per request, keep below the Provider's spec.timeout (default %(default)s)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="open connections; at the cap the least useful idle one is closed (default %(default)s)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=IDLE_TIMEOUT_SECONDS,
        help="seconds a connection may wait for its next request; Gatekeeper never reuses one (default %(default)s)",
    )
    serve.add_argument(
        "--handshake-timeout",
        type=float,
        default=HANDSHAKE_TIMEOUT_SECONDS,
        help="seconds to complete the TLS handshake (default %(default)s)",
    )
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT_SECONDS,
        help="seconds from a request's first byte until it is complete (default %(default)s)",
    )
    serve.add_argument("--watch-timeout", type=int, default=300, help="seconds per watch stream (default 300)")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    serve.set_defaults(run=run)


def _split_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise InputError("--listen", f"want HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def _credentials(args: argparse.Namespace) -> KubeCredentials:
    try:
        return from_kubeconfig(args.kubeconfig, args.context) if args.kubeconfig else in_cluster()
    except KubeAuthError as exc:
        raise InputError("--kubeconfig" if args.kubeconfig else "in-cluster", str(exc)) from exc


def build_source(args: argparse.Namespace, metrics: ProviderMetrics, logger: JsonLogger) -> JobSetSource:
    if args.objects:
        return StaticJobSetSource(doc.body for path in args.objects for doc in read_documents(path))
    settings = WatchSettings(namespace=args.namespace, watch_timeout_seconds=args.watch_timeout)
    return KubeJobSetSource(_credentials(args), metrics, logger, settings)


def run(args: argparse.Namespace) -> int:
    logger = JsonLogger(min_level=args.log_level)
    metrics = ProviderMetrics()
    host, port = _split_listen(args.listen)
    try:
        config = ServeConfig(
            tls=TLSFiles(args.tls_cert, args.tls_key, args.client_ca),
            host=host,
            port=port,
            health_port=args.health_port,
            max_keys=args.max_keys,
            request_timeout=args.request_timeout,
            limits=Limits(
                max_body_bytes=args.max_body_bytes,
                max_connections=args.max_connections,
                idle_timeout=args.idle_timeout,
                handshake_timeout=args.handshake_timeout,
                read_timeout=args.read_timeout,
            ),
        )
    except InvalidSetting as exc:  # settings are named after their flags
        raise InputError(f"--{exc.setting.replace('_', '-')}", exc.reason) from exc
    source = build_source(args, metrics, logger)
    try:
        server = ProviderServer(source, config, metrics, logger)
    except OSError as exc:
        raise InputError("provider serve", f"cannot start: {exc}") from exc
    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        logger.info("signal", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    server.start()
    while not stop.wait(1.0):
        pass
    server.stop()
    return 0
