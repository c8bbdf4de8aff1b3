"""`trainer-policy bundle build|sign|verify`: the shipped Rego as an OPA bundle, signed the way OPA verifies."""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path

from generator.bundle.archive import read_archive, write_archive
from generator.bundle.build import SIGNATURES, build_bundle
from generator.bundle.check import bundle_problems
from generator.bundle.signing import (
    ALGORITHMS,
    SignatureError,
    SigningKey,
    signatures_document,
    signed_token,
    verify_files,
)
from generator.errors import InputError
from generator.paths import BUNDLES_DIR, PROJECT_ROOT, gatekeeper_bundle_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="build, sign and verify OPA bundles of the policies",
        description="OPA bundles (gzipped tar, .manifest, optional .signatures.json) of each profile's Rego.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    build = verbs.add_parser(
        "build",
        help="write dist/kubeflow-trainer-policy-<profile>.tar.gz per profile",
        description="Build reproducible OPA bundles from the generated ConstraintTemplates.",
    )
    build.add_argument("--profile", action="append", help="profile(s) to build (default: every generated one)")
    build.add_argument("--output-dir", default=str(PROJECT_ROOT / "dist"), help="default: %(default)s")
    build.add_argument("--revision", help="manifest revision (default: version + content hash)")
    build.set_defaults(run=run_build)

    sign = verbs.add_parser(
        "sign",
        help="add .signatures.json to a bundle",
        description="Sign every file of a bundle with a PEM private key (OPA's JWT format).",
    )
    sign.add_argument("bundle", metavar="BUNDLE.tar.gz")
    sign.add_argument("--signing-key", required=True, metavar="KEY.pem", help="RSA or EC private key (PEM)")
    sign.add_argument("--signing-alg", default="RS256", choices=sorted(ALGORITHMS))
    sign.add_argument("--key-id", default="default", help="kid of the JWT (OPA's keys.<id>; default %(default)s)")
    sign.add_argument("--scope", default="", help="scope claim OPA checks against its configuration")
    sign.add_argument("-o", "--output", help="write here instead of replacing BUNDLE")
    sign.set_defaults(run=run_sign)

    verify = verbs.add_parser(
        "verify",
        help="check a bundle would activate (and its signature, given a key)",
        description="Check manifest, roots and that the Rego compiles; with "
        "--verification-key also the signature of every file.",
    )
    verify.add_argument("bundle", metavar="BUNDLE.tar.gz")
    verify.add_argument("--verification-key", metavar="PUB.pem", help="public key (PEM) the bundle was signed for")
    verify.add_argument("--key-id", default="", help="expected kid (default: any)")
    verify.add_argument("--scope", default="")
    verify.set_defaults(run=run_verify)


def _version() -> str:
    try:
        return metadata.version("kubeflow-trainer-policy")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def run_build(args: argparse.Namespace) -> int:
    profiles = args.profile or sorted(p.name for p in (BUNDLES_DIR / "gatekeeper").iterdir() if p.is_dir())
    for profile in profiles:
        source = gatekeeper_bundle_dir(profile)
        if not source.is_dir():
            raise InputError(str(source), f"no generated bundle for profile {profile}")
        content = build_bundle(source, profile, _version(), args.revision)
        problems = bundle_problems(content.files)
        if problems:
            raise InputError(str(source), f"the bundle would not activate: {problems[0]}")
        output = Path(args.output_dir) / f"kubeflow-trainer-policy-{profile}.tar.gz"
        write_archive(output, content.files)
        print(f"{output}: {len(content.files)} files, revision {content.revision}, roots {', '.join(content.roots)}")
    return 0


def _read_key(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from exc


def run_sign(args: argparse.Namespace) -> int:
    files = read_archive(Path(args.bundle))
    try:
        key = SigningKey.from_pem(_read_key(args.signing_key), args.signing_alg)
    except ValueError as exc:
        raise InputError(args.signing_key, " ".join(str(exc).split())) from exc
    files.pop(SIGNATURES, None)
    files[SIGNATURES] = signatures_document(signed_token(files, key, args.key_id, args.scope))
    output = Path(args.output or args.bundle)
    write_archive(output, files)
    print(f"{output}: signed {len(files) - 1} files with {args.signing_alg}, key id {args.key_id}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    files = read_archive(Path(args.bundle))
    problems = bundle_problems(files)
    if args.verification_key:
        try:
            verify_files(files, _read_key(args.verification_key), args.key_id, args.scope)
        except SignatureError as exc:
            problems.append(f"signature: {exc}")
        except ValueError as exc:
            raise InputError(args.verification_key, " ".join(str(exc).split())) from exc
    for problem in problems:
        print(f"{args.bundle}: {problem}")
    if problems:
        return 1
    signed = "signature verified" if args.verification_key else "not signature-checked"
    print(f"{args.bundle}: ok ({len(files)} files, {signed})")
    return 0
