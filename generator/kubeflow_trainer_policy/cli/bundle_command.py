"""`trainer-policy bundle build|sign|verify|serve|push|pull`: the policies as OPA bundles, signed, served, published."""

from __future__ import annotations

import argparse
import os
import re
import sys
from importlib import metadata
from pathlib import Path

from kubeflow_trainer_policy.atomic import staged_folder, write_bytes
from kubeflow_trainer_policy.bundle.activation import activation_problems
from kubeflow_trainer_policy.bundle.archive import (
    add_limit_arguments,
    archive_bytes,
    limits_from_args,
    read_archive,
    write_archive,
)
from kubeflow_trainer_policy.bundle.build import SIGNATURES, build_bundle
from kubeflow_trainer_policy.bundle.oci import MAX_LAYER_BYTES, RegistryError, RegistryOptions, pull, push
from kubeflow_trainer_policy.bundle.server import bundle_files, make_server, server_url
from kubeflow_trainer_policy.bundle.signing import (
    ALGORITHMS,
    BundleFileError,
    KeyFileError,
    SignatureError,
    SigningKey,
    load_public_key,
    signatures_document,
    signed_token,
    verify_files,
)
from kubeflow_trainer_policy.errors import EXIT_FAILED, InputError
from kubeflow_trainer_policy.paths import BUNDLES_DIR, gatekeeper_bundle_dir
from kubeflow_trainer_policy_provider.reader import positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="build, sign, verify, serve and publish OPA bundles of the policies",
        description="OPA bundles (gzipped tar, .manifest, optional .signatures.json) of each profile's Rego.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    build = verbs.add_parser(
        "build",
        help="write dist/kubeflow-trainer-policy-<profile>.tar.gz per profile",
        description="Build reproducible OPA bundles from the generated ConstraintTemplates.",
    )
    build.add_argument(
        "--profile", action="append", metavar="P", help="profile to build, repeatable (default: every generated one)"
    )
    build.add_argument(
        "--output-dir",
        default="dist",
        metavar="DIR",
        help="folder for the tarballs, created if missing (default: %(default)s, in the current folder)",
    )
    build.add_argument("--revision", help="manifest revision (default: version + content hash)")
    build.add_argument(
        "--constraints",
        metavar="DIR",
        help="build from these templates and constraints (your parameters) instead of bundles/gatekeeper/<profile>; "
        "needs exactly one --profile, which names the output (default: the profile's bundle)",
    )
    build.set_defaults(run=run_build)

    sign = verbs.add_parser(
        "sign",
        help="add .signatures.json to a bundle",
        description="Sign every file of a bundle with a PEM private key (OPA's JWT format).",
    )
    sign.add_argument("bundle", metavar="BUNDLE.tar.gz")
    sign.add_argument(
        "--signing-key",
        required=True,
        metavar="KEY.pem",
        help="unencrypted PEM private key: RSA for RS*, EC on the matching curve for ES* (P-256, P-384, P-521)",
    )
    sign.add_argument(
        "--signing-alg", default="RS256", choices=sorted(ALGORITHMS), help="JWT algorithm (default %(default)s)"
    )
    sign.add_argument("--key-id", default="default", help="kid of the JWT (OPA's keys.<id>; default %(default)s)")
    sign.add_argument("--scope", default="", help="scope claim OPA checks against its configuration (default: none)")
    sign.add_argument("-o", "--output", metavar="FILE", help="write here instead of replacing BUNDLE (default: BUNDLE)")
    add_limit_arguments(sign)
    sign.set_defaults(run=run_sign)

    verify = verbs.add_parser(
        "verify",
        help="check that OPA activates a bundle (and its signature, given a key)",
        description="Activate the bundle in the real OPA (`opa run --bundle`: the pinned opa, or $TRAINER_POLICY_OPA) "
        "as OPA's runtime would: manifest, roots, data and Rego compiled together; with --verification-key also "
        "the signature of every file, checked here and by OPA.",
    )
    verify.add_argument("bundle", metavar="BUNDLE.tar.gz")
    verify.add_argument(
        "--verification-key", metavar="PUB.pem", help="PEM public key the bundle was signed for (default: no check)"
    )
    verify.add_argument("--key-id", default="", help="expected kid (default: any)")
    verify.add_argument("--scope", default="", help="expected scope claim (default: none)")
    add_limit_arguments(verify)
    verify.set_defaults(run=run_verify)

    serve = verbs.add_parser(
        "serve",
        help="serve built bundles over HTTP(S) with ETags, for OPA's bundle downloader",
        description="Serve DIR/<name>.tar.gz at /<name>.tar.gz. Every answer carries an ETag (SHA-256 of the file); "
        "If-None-Match with it gets 304. A rebuilt bundle is served with a new ETag at once. Other paths: 400 "
        "(malformed) or 404 (no such bundle).",
    )
    serve.add_argument("dir", metavar="DIR", help="folder of built bundles (e.g. dist)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    serve.add_argument("--port", type=int, default=8282, help="port (default %(default)s; 0 picks a free one)")
    serve.add_argument("--cert-file", help="serve HTTPS with this certificate (PEM) (default: plain HTTP)")
    serve.add_argument("--key-file", help="key of --cert-file (PEM) (default: none)")
    serve.add_argument("--access-log", action="store_true", help="log every request on stderr (default: off)")
    add_limit_arguments(serve)
    serve.set_defaults(run=run_serve)

    push_verb = verbs.add_parser(
        "push",
        help="publish a bundle to an OCI registry, in the layout OPA's OCI downloader reads",
        description="Upload BUNDLE as an OCI artifact: one application/vnd.oci.image.layer.v1.tar+gzip layer "
        "(the tarball) and an application/vnd.oci.image.config.v1+json config, tagged REF.",
    )
    push_verb.add_argument("bundle", metavar="BUNDLE.tar.gz")
    push_verb.add_argument("reference", metavar="REF", help="host[:port]/repository:tag")
    _registry_options(push_verb)
    add_limit_arguments(push_verb)
    push_verb.set_defaults(run=run_push)

    pull_verb = verbs.add_parser(
        "pull",
        help="fetch a bundle from an OCI registry (the layer OPA would load)",
        description="Download the first tar+gzip layer of REF, as OPA does, check its digest and that it would "
        "activate (and its signature with --verification-key), then write it to --output.",
    )
    pull_verb.add_argument("reference", metavar="REF", help="host[:port]/repository:tag or ...@sha256:<digest>")
    pull_verb.add_argument("-o", "--output", required=True, metavar="FILE.tar.gz")
    pull_verb.add_argument(
        "--verification-key", metavar="PUB.pem", help="refuse a bundle whose signature fails (default: no check)"
    )
    pull_verb.add_argument("--key-id", default="", help="expected kid (default: any)")
    pull_verb.add_argument("--scope", default="", help="expected scope claim (default: none)")
    pull_verb.add_argument(
        "--max-layer-bytes",
        metavar="N",
        help=f"largest bundle layer accepted, as the manifest declares it and as downloaded; the download stops "
        f"there (also {LAYER_BYTES_ENV}) (default {MAX_LAYER_BYTES})",
    )
    _registry_options(pull_verb)
    add_limit_arguments(pull_verb)
    pull_verb.set_defaults(run=run_pull)


PASSWORD_ENV = "TRAINER_POLICY_REGISTRY_PASSWORD"
LAYER_BYTES_ENV = "TRAINER_POLICY_BUNDLE_LAYER_BYTES"


def _registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plain-http", action="store_true", help="HTTP instead of HTTPS, for a local test registry (default: HTTPS)"
    )
    parser.add_argument("--ca-file", help="CA bundle of the registry's certificate (default: the system's)")
    parser.add_argument(
        "--username", help="registry user (HTTP Basic, or a token service's login) (default: anonymous)"
    )
    parser.add_argument(
        "--password-file",
        metavar="FILE",
        help=f"file holding the password (default: ${PASSWORD_ENV}); never on the command line",
    )


def _options(args: argparse.Namespace) -> RegistryOptions:
    password = None
    if args.password_file:
        try:
            password = Path(args.password_file).read_text().rstrip("\r\n")
        except OSError as exc:
            raise InputError(args.password_file, exc.strerror or str(exc)) from exc
    elif args.username:
        password = os.environ.get(PASSWORD_ENV)
        if password is None:
            raise InputError("--username", f"needs --password-file or ${PASSWORD_ENV}")
    if args.ca_file and not Path(args.ca_file).is_file():
        raise InputError(args.ca_file, "no such file", field="--ca-file")
    return RegistryOptions(args.plain_http, args.ca_file, args.username, password)


def _version() -> str:
    try:
        return metadata.version("kubeflow-trainer-policy")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def run_build(args: argparse.Namespace) -> int:
    known = sorted(p.name for p in (BUNDLES_DIR / "gatekeeper").iterdir() if p.is_dir())
    if args.constraints and len(args.profile or []) != 1:
        raise InputError("--constraints", "needs exactly one --profile (it names the bundle)")
    for profile in args.profile or []:
        if args.constraints and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", profile):
            raise InputError("--profile", f"names the output file: letters, digits, '.', '_', '-', got {profile!r}")
        if not args.constraints and profile not in known:
            raise InputError("--profile", f"no generated bundle for profile {profile!r} (known: {', '.join(known)})")
    if args.constraints and not Path(args.constraints).is_dir():
        raise InputError(args.constraints, "no such folder", field="--constraints")
    output_dir = Path(args.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise InputError(args.output_dir, "exists and is not a folder", field="--output-dir")
    built = []
    for profile in args.profile or known:  # every bundle is built and checked before any is written
        source = Path(args.constraints) if args.constraints else gatekeeper_bundle_dir(profile)
        content = build_bundle(source, profile, _version(), args.revision)
        problems = activation_problems(content.files)
        if problems:
            raise InputError(str(source), f"the bundle would not activate: {problems[0]}")
        built.append((f"kubeflow-trainer-policy-{profile}.tar.gz", content))
    # All bundles or none: written in a staging folder next to the output, moved in only when every one is whole
    # (a full disk leaves the old set as it was, and no success line).
    with staged_folder(output_dir) as staging:
        for name, content in built:
            write_bytes(staging / name, archive_bytes(content.files))
    for name, content in built:
        output = output_dir / name
        print(f"{output}: {len(content.files)} files, revision {content.revision}, roots {', '.join(content.roots)}")
        for template, reason in sorted(content.left_out.items()):
            print(f"{output}: left out template {template}: {reason}")
    return 0


def _read_key(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from exc


def run_sign(args: argparse.Namespace) -> int:
    files = read_archive(Path(args.bundle), limits_from_args(args))
    try:
        key = SigningKey.from_pem(_read_key(args.signing_key), args.signing_alg)
    except KeyFileError as exc:
        raise InputError(args.signing_key, " ".join(str(exc).split())) from exc
    files.pop(SIGNATURES, None)
    try:
        files[SIGNATURES] = signatures_document(signed_token(files, key, args.key_id, args.scope))
    except BundleFileError as exc:
        raise InputError(args.bundle, str(exc)) from exc
    output = Path(args.output or args.bundle)
    write_archive(output, files)
    print(f"{output}: signed {len(files) - 1} files with {args.signing_alg}, key id {args.key_id}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    public_pem = _read_key(args.verification_key) if args.verification_key else None
    if public_pem is not None:
        try:
            load_public_key(public_pem)  # a bad key is an input error (2), not a failed verification (1)
        except KeyFileError as exc:
            raise InputError(args.verification_key, " ".join(str(exc).split())) from exc
    files = read_archive(Path(args.bundle), limits_from_args(args))
    problems = []
    if public_pem is not None:
        try:
            verify_files(files, public_pem, args.key_id, args.scope)
        except SignatureError as exc:
            problems.append(f"signature: {exc}")
    key_file = Path(args.verification_key) if args.verification_key else None
    problems += activation_problems(files, key_file, args.key_id, args.scope)
    for problem in problems:
        print(f"{args.bundle}: {problem}", file=sys.stderr)
    if problems:
        return EXIT_FAILED
    signed = "signature verified" if args.verification_key else "not signature-checked"
    print(f"{args.bundle}: ok ({len(files)} files, {signed})")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if not root.is_dir():
        raise InputError(args.dir, "no such folder")
    if bool(args.cert_file) != bool(args.key_file):
        raise InputError("--cert-file", "--cert-file and --key-file go together")
    limits = limits_from_args(args)
    try:
        server = make_server(
            root, args.host, args.port, args.cert_file, args.key_file, quiet=not args.access_log, limits=limits
        )
    except OSError as exc:
        raise InputError(f"{args.host}:{args.port}", exc.strerror or str(exc)) from exc
    url = server_url(server, bool(args.cert_file))
    names = bundle_files(root, limits)
    print(f"serving {root} at {url} ({', '.join(names) or 'no bundle yet'})", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def run_push(args: argparse.Namespace) -> int:
    path = Path(args.bundle)
    files = read_archive(path, limits_from_args(args))
    problems = activation_problems(files)
    if problems:
        raise InputError(args.bundle, f"not a bundle OPA would activate: {problems[0]}")
    try:
        result = push(path, args.reference, _options(args))
    except RegistryError as exc:
        raise InputError(args.reference, str(exc)) from exc
    print(
        f"{args.reference}: pushed {args.bundle} ({result.size} bytes), manifest {result.manifest_digest}, "
        f"bundle layer {result.layer_digest}"
    )
    return 0


def run_pull(args: argparse.Namespace) -> int:
    limits = limits_from_args(args)
    max_layer = MAX_LAYER_BYTES
    if args.max_layer_bytes is not None:
        max_layer = positive_int(str(args.max_layer_bytes), "--max-layer-bytes")
    elif LAYER_BYTES_ENV in os.environ:
        max_layer = positive_int(os.environ[LAYER_BYTES_ENV], LAYER_BYTES_ENV)
    public_pem = _read_key(args.verification_key) if args.verification_key else None
    try:
        result = pull(args.reference, _options(args), max_layer)
    except RegistryError as exc:
        raise InputError(args.reference, str(exc)) from exc
    # Verified in memory (the real OPA activates a temporary copy), before anything is written: a refused
    # bundle leaves no file behind.
    files = read_archive(result.content, limits, name=f"{args.reference} (layer {result.layer_digest})")
    problems = []
    if public_pem is not None:
        try:
            verify_files(files, public_pem, args.key_id, args.scope)
        except SignatureError as exc:
            problems.append(f"signature: {exc}")
        except ValueError as exc:
            raise InputError(args.verification_key, " ".join(str(exc).split())) from exc
    key_file = Path(args.verification_key) if args.verification_key else None
    problems += activation_problems(files, key_file, args.key_id, args.scope)
    if problems:
        raise InputError(args.reference, f"the pulled bundle is refused: {problems[0]}")
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(output, result.content)
    signed = ", signature verified" if args.verification_key else ""
    print(
        f"{output}: pulled {args.reference} (manifest {result.manifest_digest}, layer {result.layer_digest}{signed})",
        file=sys.stdout,
    )
    return 0
