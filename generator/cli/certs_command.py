"""`trainer-policy certs`: a CA, the provider's serving certificate, client certificates, the caBundle."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from generator.errors import InputError
from provider.certs import KeyPair, ca_bundle, issue, make_ca, service_names

PROVIDER_NAME = "trainer-jobset-provider"
DEFAULT_NAMESPACE = "trainer-policy-system"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="make the provider's CA, serving certificate and the Provider caBundle",
        description=(
            "Write ca.crt/ca.key, tls.crt/tls.key (serverAuth for the Service's DNS names plus --san), "
            "client-<NAME>.crt/.key for each --client, and ca-bundle.txt into --out-dir; print the caBundle "
            "(base64 of ca.crt) for the Provider object's spec.caBundle. Reuse a CA with --ca-cert/--ca-key."
        ),
    )
    parser.add_argument("--out-dir", required=True, help="folder to write into (created if missing)")
    parser.add_argument("--service", default=PROVIDER_NAME, help="Service name (default %(default)s)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="Service namespace (default %(default)s)")
    parser.add_argument("--san", action="append", default=[], help="extra DNS name or IP for tls.crt (repeatable)")
    parser.add_argument("--client", action="append", default=[], metavar="NAME", help="also issue a client cert")
    parser.add_argument("--ca-cert", help="existing CA certificate to sign with (with --ca-key)")
    parser.add_argument("--ca-key", help="key of --ca-cert")
    parser.add_argument("--days", type=int, default=365, help="validity in days (default %(default)s)")
    parser.add_argument("--provider-yaml", help="also write the Provider object with this caBundle to this file")
    parser.add_argument("--provider-name", default=PROVIDER_NAME, help="Provider object name (default %(default)s)")
    parser.add_argument("--timeout", type=int, default=2, help="Provider spec.timeout seconds (default %(default)s)")
    parser.set_defaults(run=run)


def _load_ca(args: argparse.Namespace) -> KeyPair | None:
    if bool(args.ca_cert) != bool(args.ca_key):
        raise InputError("--ca-cert", "--ca-cert and --ca-key go together")
    if not args.ca_cert:
        return None
    try:
        return KeyPair(Path(args.ca_cert).read_bytes(), Path(args.ca_key).read_bytes())
    except OSError as exc:
        raise InputError(args.ca_cert, str(exc)) from exc


def provider_object(name: str, url: str, bundle: str, timeout: int) -> dict[str, object]:
    return {
        "apiVersion": "externaldata.gatekeeper.sh/v1beta1",
        "kind": "Provider",
        "metadata": {"name": name},
        "spec": {"url": url, "timeout": timeout, "caBundle": bundle},
    }


def run(args: argparse.Namespace) -> int:
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ca = _load_ca(args)
    if ca is None:
        ca = make_ca(days=args.days)
        ca.write(out / "ca.crt", out / "ca.key")
    else:
        (out / "ca.crt").write_bytes(ca.cert_pem)
    names = service_names(args.service, args.namespace) + list(args.san)
    try:
        issue(ca, f"{args.service}.{args.namespace}.svc", names, days=args.days).write(out / "tls.crt", out / "tls.key")
        for client in args.client:
            issue(ca, client, [], client=True, days=args.days).write(
                out / f"client-{client}.crt", out / f"client-{client}.key"
            )
    except ValueError as exc:
        raise InputError("--ca-key", str(exc)) from exc
    bundle = ca_bundle(ca.cert_pem)
    (out / "ca-bundle.txt").write_text(bundle + "\n")
    if args.provider_yaml:
        url = f"https://{args.service}.{args.namespace}:8443/"
        doc = provider_object(args.provider_name, url, bundle, args.timeout)
        Path(args.provider_yaml).write_text(yaml.safe_dump(doc, sort_keys=False))
    print(bundle)
    return 0
