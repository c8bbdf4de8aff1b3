"""`trainer-policy-provider serve` (also `trainer-policy provider serve`): the external data provider for
JobSet state over HTTPS.

The provider's own entry point and image: it imports nothing of the generator (no OPA engine, renderer or
runner), so it installs and starts without them."""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import sys
import threading
from collections.abc import Sequence
from typing import Any

from kubeflow_trainer_policy_provider.errors import InputError
from kubeflow_trainer_policy_provider.handler import MAX_KEYS
from kubeflow_trainer_policy_provider.http_server import (
    HANDSHAKE_TIMEOUT_SECONDS,
    IDLE_TIMEOUT_SECONDS,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    READ_TIMEOUT_SECONDS,
    InvalidSetting,
    Limits,
)
from kubeflow_trainer_policy_provider.kube_auth import KubeAuthError, KubeCredentials, default_credentials
from kubeflow_trainer_policy_provider.kube_source import DEFAULT_MAX_STALENESS, KubeJobSetSource, WatchSettings
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.reader import (
    add_limit_arguments,
    configure,
    limits_from_args,
    read_documents,
    unknown_variables,
)
from kubeflow_trainer_policy_provider.server import DEFAULT_REQUEST_TIMEOUT, ProviderServer, ServeConfig
from kubeflow_trainer_policy_provider.sources import JobSetSource, StaticJobSetSource
from kubeflow_trainer_policy_provider.tls import TLSFiles

MAX_PORT = 65535
MIN_STALENESS = 1.0


PROG = "trainer-policy-provider"
SERVE_HELP = "serve ProviderRequests over HTTPS (TLS 1.3 only)"
SERVE_DESCRIPTION = (
    "Serve externaldata.gatekeeper.sh/v1beta1 ProviderRequests over HTTPS (TLS 1.3 only), with /healthz, "
    "/readyz and /metrics. JobSets come from the Kubernetes API (list+watch cache; in-cluster service "
    "account by default, or --kubeconfig) or, offline, from --objects files. Logs are JSON lines on stderr."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Gatekeeper external data provider answering <namespace>/<name> keys with JobSet state.",
        epilog="Exit codes: 0 stopped by SIGTERM/SIGINT; 2 any input or internal error, with one line on stderr.",
    )
    commands = parser.add_subparsers(dest="provider_command", required=True, metavar="SUBCOMMAND")
    add_serve_arguments(commands.add_parser("serve", help=SERVE_HELP, description=SERVE_DESCRIPTION))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The provider's own command line: one line on stderr and exit 2 for bad input or any failure."""
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help exits 0, a usage error 2
        return 0 if exc.code in (0, None) else 2
    for warning in unknown_variables():
        print(f"{PROG} serve: {warning}", file=sys.stderr)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except InputError as exc:
        print(f"{PROG} serve: {' '.join(str(exc).split())}", file=sys.stderr)
    except Exception as exc:
        print(f"{PROG} serve: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
    return 2


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--listen", default="0.0.0.0:8443", metavar="HOST:PORT", help="address for HTTPS (default %(default)s)"
    )
    serve.add_argument(
        "--health-port",
        type=int,
        metavar="PORT",
        help="serve /healthz, /readyz and /metrics over plain HTTP on this port, and no longer on the HTTPS port "
        "(default: off: the HTTPS port serves them)",
    )
    serve.add_argument(
        "--tls-cert", required=True, metavar="FILE", help="serving certificate (PEM); reloaded when it changes"
    )
    serve.add_argument(
        "--tls-key", required=True, metavar="FILE", help="key of --tls-cert (PEM); reloaded when it changes"
    )
    serve.add_argument(
        "--client-ca",
        metavar="FILE",
        help="require client certificates signed by this PEM CA (mTLS; Gatekeeper's CA) (default: no mTLS)",
    )
    source = serve.add_mutually_exclusive_group()
    source.add_argument(
        "--objects",
        nargs="+",
        action="extend",
        metavar="FILE",
        help="static JobSets from YAML/JSON files, offline (default: list+watch the Kubernetes API)",
    )
    source.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="reach the API with this kubeconfig (default: $KUBECONFIG, else the in-cluster service account, "
        "else ~/.kube/config); token, tokenFile, client certificates and exec credential plugins are supported",
    )
    serve.add_argument("--context", help="kubeconfig context (default: current-context)")
    serve.add_argument(
        "--namespace",
        help="watch JobSets in this namespace only; a lookup for any other namespace is then a per-key error, "
        "so the policy denies there (default: all namespaces)",
    )
    add_limit_arguments(serve)
    serve.add_argument(
        "--max-keys", type=int, default=MAX_KEYS, help="keys per ProviderRequest, at least 1 (default %(default)s)"
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=MAX_BODY_BYTES,
        help="request body cap in bytes, at least 1 (default %(default)s)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=DEFAULT_REQUEST_TIMEOUT,
        help="seconds per request, > 0, keep below the Provider's spec.timeout (default %(default)s)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="open connections at most, >= 1; at the cap the least useful idle one is closed (default %(default)s)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=IDLE_TIMEOUT_SECONDS,
        help="seconds a connection may wait for its next request, > 0; Gatekeeper reuses none (default %(default)s)",
    )
    serve.add_argument(
        "--watch-timeout", type=int, default=300, help="seconds per watch stream, at least 1 (default %(default)s)"
    )
    serve.add_argument(
        "--max-staleness",
        type=float,
        default=DEFAULT_MAX_STALENESS,
        help="seconds, >= 1: once the watch cache has not been confirmed by the API server for this long, lookups "
        "are live GETs, and errors when the API does not answer (default %(default)s)",
    )
    serve.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="least severe JSON log line written to stderr (default %(default)s)",
    )
    serve.add_argument(
        "--handshake-timeout",
        type=float,
        default=HANDSHAKE_TIMEOUT_SECONDS,
        help="seconds to complete the TLS handshake, > 0 (default %(default)s)",
    )
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT_SECONDS,
        help="seconds from a request's first byte until it is complete, > 0 (default %(default)s)",
    )
    serve.add_argument(
        "--tls-library",
        choices=("bundled", "stdlib"),
        help="ignored (TLS is served by Python's ssl module); still accepted so that deployments which set it "
        "keep starting (default: not set)",
    )


def _split_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
        raise InputError("--listen", f"want HOST:PORT with a port from 1 to {MAX_PORT}, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def check_flags(args: argparse.Namespace) -> None:
    """Every limit, port and TLS file is checked before anything starts."""
    if args.health_port is not None and not 1 <= args.health_port <= MAX_PORT:
        raise InputError("--health-port", f"must be 1 to {MAX_PORT}, got {args.health_port}")
    for flag in ("max_keys", "max_body_bytes", "max_connections", "watch_timeout"):
        if getattr(args, flag) < 1:
            raise InputError(f"--{flag.replace('_', '-')}", f"must be at least 1, got {getattr(args, flag)}")
    for flag in ("request_timeout", "idle_timeout"):
        value = getattr(args, flag)
        if not 0 < value < float("inf"):
            raise InputError(f"--{flag.replace('_', '-')}", f"must be a positive number of seconds, got {value}")
    # Below a second the prober would poll the API server many times a second and time out on a busy one.
    if not MIN_STALENESS <= args.max_staleness < float("inf"):
        raise InputError("--max-staleness", f"must be at least {MIN_STALENESS:g} seconds, got {args.max_staleness}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(args.tls_cert, args.tls_key)
    except (OSError, ssl.SSLError, ValueError) as exc:
        problem = f"--tls-cert and --tls-key {args.tls_key} are not a matching PEM pair: {' '.join(str(exc).split())}"
        raise InputError(args.tls_cert, problem) from exc
    if args.client_ca:
        try:
            context.load_verify_locations(cafile=args.client_ca)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise InputError(
                args.client_ca, f"--client-ca is not a PEM CA bundle: {' '.join(str(exc).split())}"
            ) from exc


def _credentials(args: argparse.Namespace) -> KubeCredentials:
    where = args.kubeconfig or os.environ.get("KUBECONFIG") or "in-cluster"
    try:
        credentials, where = default_credentials(args.kubeconfig, args.context)
        credentials.start()
        return credentials
    except KubeAuthError as exc:
        raise InputError(where, str(exc), field="--kubeconfig" if args.kubeconfig else None) from exc
    except (ValueError, TypeError, AttributeError, KeyError) as exc:  # a kubeconfig of the wrong shape
        raise InputError(where, f"not a usable kubeconfig: {type(exc).__name__}: {exc}", field="--kubeconfig") from exc


def build_source(args: argparse.Namespace, metrics: ProviderMetrics, logger: JsonLogger) -> JobSetSource:
    if args.objects:
        return StaticJobSetSource(doc.body for path in args.objects for doc in read_documents(path))
    settings = WatchSettings(
        namespace=args.namespace, watch_timeout_seconds=args.watch_timeout, max_staleness=args.max_staleness
    )
    return KubeJobSetSource(_credentials(args), metrics, logger, settings)


def run(args: argparse.Namespace) -> int:
    host, port = _split_listen(args.listen)
    check_flags(args)
    configure(limits_from_args(args))
    logger = JsonLogger(min_level=args.log_level)
    if args.tls_library is not None:
        logger.warning("flag_ignored", flag="--tls-library", reason="TLS is always served by Python's ssl module")
    metrics = ProviderMetrics()
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
    except (OSError, ssl.SSLError) as exc:
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


if __name__ == "__main__":
    sys.exit(main())
