"""`trainer-policy certs`: a CA, the provider's serving certificate, client certificates, the caBundle.

Every flag and file is checked before anything is written. A folder that already holds a CA is refused unless
that CA is reused (`--ca-cert/--ca-key`) or replaced on purpose (`--rotate-ca`): replacing it silently would make
every certificate it issued stop verifying. The files are published as one set (atomic.publish_set): a kill or a
full disk at any moment leaves the old set or the new one, never a mix; a folder this run created is removed
again when it fails.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from kubeflow_trainer_policy.errors import InputError

if TYPE_CHECKING:
    from kubeflow_trainer_policy_provider.certs import KeyPair

PROVIDER_NAME = "trainer-jobset-provider"
DEFAULT_NAMESPACE = "trainer-policy-system"
DEFAULT_DAYS = 365
MAX_TIMEOUT_SECONDS = 300
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
DNS_NAME = re.compile(rf"^(\*\.)?{_LABEL}(\.{_LABEL})*$")
OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
FILE_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="make the provider's CA, serving certificate and the Provider caBundle",
        description=(
            "Write ca.crt/ca.key, tls.crt/tls.key (serverAuth for the Service's DNS names plus --san), "
            "client-<NAME>.crt/.key for each --client, and ca-bundle.txt into --out-dir; print the caBundle "
            "(base64 of ca.crt) for the Provider object's spec.caBundle. Reuse a CA with --ca-cert/--ca-key. "
            "Nothing is written unless every file could be made. For a local provider: --san localhost --san 127.0.0.1."
        ),
    )
    parser.add_argument("--out-dir", required=True, metavar="DIR", help="folder to write into (created if missing)")
    parser.add_argument("--service", default=PROVIDER_NAME, help="Service name, a DNS label (default %(default)s)")
    parser.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help="Service namespace, a DNS label (default %(default)s)"
    )
    parser.add_argument(
        "--san",
        action="append",
        default=[],
        metavar="NAME",
        help="extra DNS name or IP address for tls.crt, repeatable (default: the Service's DNS names only)",
    )
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="NAME",
        help="also issue client-NAME.crt/.key (clientAuth), repeatable (default: none)",
    )
    parser.add_argument(
        "--ca-cert", metavar="FILE", help="existing PEM CA certificate to sign with, with --ca-key (default: a new CA)"
    )
    parser.add_argument("--ca-key", metavar="FILE", help="unencrypted PEM EC key of --ca-cert (default: a new CA)")
    parser.add_argument(
        "--rotate-ca",
        action="store_true",
        help="replace the CA --out-dir already holds (with a new one, or with --ca-cert/--ca-key): certificates "
        "the old CA issued stop verifying (default: off; a folder with a CA is refused unless its CA is reused)",
    )
    parser.add_argument(
        "--days",
        type=int,
        default=DEFAULT_DAYS,
        help="validity of new certificates in days, 1 to 3650 (default %(default)s)",
    )
    parser.add_argument(
        "--provider-yaml",
        metavar="FILE",
        help="also write the Provider object with this caBundle to this file (default: none)",
    )
    parser.add_argument("--provider-name", default=PROVIDER_NAME, help="Provider object name (default %(default)s)")
    parser.add_argument(
        "--timeout",
        type=int,
        default=2,
        help=f"Provider spec.timeout in whole seconds, 1 to {MAX_TIMEOUT_SECONDS} (default %(default)s)",
    )
    parser.set_defaults(run=run)


def _read(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read {flag}: {exc.strerror or exc}") from exc


def _load_ca(args: argparse.Namespace) -> KeyPair | None:
    from kubeflow_trainer_policy_provider.certs import KeyPair, check_ca

    if bool(args.ca_cert) != bool(args.ca_key):
        raise InputError("--ca-cert", "--ca-cert and --ca-key go together")
    if not args.ca_cert:
        return None
    ca = KeyPair(_read(args.ca_cert, "--ca-cert"), _read(args.ca_key, "--ca-key"))
    try:
        check_ca(ca)
    except ValueError as exc:
        raise InputError(f"{args.ca_cert}, {args.ca_key}", str(exc)) from exc
    return ca


def _check_names(args: argparse.Namespace) -> None:
    from kubeflow_trainer_policy_provider.certs import check_days

    try:
        check_days(args.days)
    except ValueError as exc:
        raise InputError("--days", str(exc)) from exc
    if not 1 <= args.timeout <= MAX_TIMEOUT_SECONDS:
        raise InputError("--timeout", f"must be 1 to {MAX_TIMEOUT_SECONDS} seconds, got {args.timeout}")
    for flag, value in (("--service", args.service), ("--namespace", args.namespace)):
        if not DNS_LABEL.match(value):
            raise InputError(flag, f"must be a DNS label (lower-case letters, digits, '-'), got {value!r}")
    if not OBJECT_NAME.match(args.provider_name) or len(args.provider_name) > 253:
        raise InputError("--provider-name", f"must be a Kubernetes object name, got {args.provider_name!r}")
    for san in args.san:
        try:
            ipaddress.ip_address(san)
        except ValueError:
            if not DNS_NAME.match(san) or len(san) > 253:
                raise InputError("--san", f"not a DNS name or IP address: {san!r}") from None
    for client in args.client:
        if not FILE_STEM.match(client) or ".." in client:
            raise InputError("--client", f"must be letters, digits, '.', '_' or '-' (it names files), got {client!r}")
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(args.out_dir, "exists and is not a folder", field="--out-dir")
    if args.provider_yaml:
        target = Path(args.provider_yaml)
        if target.is_dir() or not (target.parent.is_dir() or _in_out_dir(target, out)):
            raise InputError(
                args.provider_yaml, "must be a file in an existing folder or in --out-dir", field="--provider-yaml"
            )


def _in_out_dir(path: Path, out: Path) -> bool:
    """`--provider-yaml <out-dir>/provider.yaml` (deploy/README.md): written with the rest of the folder."""
    return path.parent.resolve() == out.resolve()


def provider_object(name: str, url: str, bundle: str, timeout: int) -> dict[str, object]:
    return {
        "apiVersion": "externaldata.gatekeeper.sh/v1beta1",
        "kind": "Provider",
        "metadata": {"name": name},
        "spec": {"url": url, "timeout": timeout, "caBundle": bundle},
    }


def _provider_yaml(args: argparse.Namespace, bundle: str) -> str:
    import yaml

    url = f"https://{args.service}.{args.namespace}:8443/"
    return yaml.safe_dump(provider_object(args.provider_name, url, bundle, args.timeout), sort_keys=False)


CA_FILES = ("ca.crt", "ca.key")


def _check_existing_ca(args: argparse.Namespace, out: Path, given: KeyPair | None) -> bytes | None:
    """Refuses to replace the CA the folder holds unless told to; returns its key when the given CA is that one
    (the key then stays in the folder's set)."""
    present = [name for name in CA_FILES if (out / name).exists()]
    if not present:
        return None
    held_cert = _read(str(out / "ca.crt"), "the CA in --out-dir") if (out / "ca.crt").exists() else None
    held_key = _read(str(out / "ca.key"), "the CA in --out-dir") if (out / "ca.key").exists() else None
    same = given is not None and (given.cert_pem == held_cert if held_cert is not None else given.key_pem == held_key)
    if same or args.rotate_ca:
        return held_key if same and held_key == given.key_pem else None  # type: ignore[union-attr]
    what = "another CA" if given is not None else "a new CA"
    raise InputError(
        str(out),
        f"already holds a CA ({', '.join(present)}); replacing it with {what} would make every certificate it "
        f"issued stop verifying: reuse it with --ca-cert {out / 'ca.crt'} --ca-key {out / 'ca.key'}, "
        "or replace it with --rotate-ca",
        field="--out-dir",
    )


def run(args: argparse.Namespace) -> int:
    from kubeflow_trainer_policy.atomic import publish_set, write_text
    from kubeflow_trainer_policy_provider.certs import ca_bundle, issue, make_ca, service_names

    _check_names(args)
    given_ca = _load_ca(args)
    out = Path(args.out_dir)
    held_key = _check_existing_ca(args, out, given_ca)
    ca = given_ca or make_ca(days=args.days)
    names = service_names(args.service, args.namespace) + list(args.san)
    bundle = ca_bundle(ca.cert_pem)
    public, private = 0o666 & ~_umask(), 0o600
    files: dict[str, tuple[bytes, int]] = {"ca.crt": (ca.cert_pem, public)}
    if given_ca is None or held_key is not None:  # a given key is not copied, unless the folder held it already
        files["ca.key"] = (ca.key_pem, private)
    serving = issue(ca, f"{args.service}.{args.namespace}.svc", names, days=args.days)
    files["tls.crt"], files["tls.key"] = (serving.cert_pem, public), (serving.key_pem, private)
    for client in args.client:
        pair = issue(ca, client, [], client=True, days=args.days)
        files[f"client-{client}.crt"], files[f"client-{client}.key"] = (pair.cert_pem, public), (pair.key_pem, private)
    files["ca-bundle.txt"] = ((bundle + "\n").encode(), public)
    if args.provider_yaml and _in_out_dir(Path(args.provider_yaml), out):
        files[Path(args.provider_yaml).name] = (_provider_yaml(args, bundle).encode(), public)
    created = _first_missing(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        publish_set(out, files)
        if args.provider_yaml and not _in_out_dir(Path(args.provider_yaml), out):
            write_text(args.provider_yaml, _provider_yaml(args, bundle))
    except BaseException:
        # publish_set leaves an existing folder as it was, but a folder it had to create stays behind, empty:
        # remove what this run created (a full disk, a kill by Ctrl-C), so a failure leaves nothing.
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    print(bundle)
    return 0


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of `path` (itself included) that does not exist yet: what writing into it creates."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            break
        missing = folder
    return missing


def _umask() -> int:
    import os

    umask = os.umask(0)
    os.umask(umask)
    return umask
