"""`trainer-policy review`: would Gatekeeper admit this request?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from generator.errors import InputError
from generator.gatekeeper.documents import read_documents, read_single
from generator.gatekeeper.external_data import HttpsProvider, InProcessProvider, ProviderClient
from generator.gatekeeper.policy_set import PolicySet, load_policy_set, with_parameters
from generator.gatekeeper.review import audit_request, request_from_document
from generator.gatekeeper.runner import GatekeeperRunner, ReviewResult
from generator.paths import DEFAULT_PROFILE, EXTERNAL_DATA_VARIANT, gatekeeper_bundle_dir
from provider.handler import ProviderHandler
from provider.sources import StaticJobSetSource

EXIT_ALLOWED, EXIT_DENIED, EXIT_ERROR = 0, 1, 2
DEFAULT_VARIANT = "synced-jobsets"
DEFAULT_PROVIDER_TIMEOUT_SECONDS = 3.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review",
        help="evaluate one admission request the way Gatekeeper would",
        description=(
            "Evaluate an admission.k8s.io/v1 AdmissionReview (or a bare object, taken as CREATE) against the "
            "bundled constraints of a profile. Exit 0 allowed, 1 denied, 2 input or engine error."
        ),
    )
    parser.add_argument("review", metavar="REVIEW.yaml", help="AdmissionReview or bare Kubernetes object")
    parser.add_argument(
        "--objects",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE",
        help="cluster objects (JobSets, runtimes, Namespaces): fill data.inventory and back the in-process provider",
    )
    parser.add_argument("--provider-url", help="call a running external data provider at this https:// URL instead")
    parser.add_argument("--ca-file", help="CA bundle that signed the provider's serving certificate")
    parser.add_argument("--client-cert", help="client certificate for a provider that requires mTLS")
    parser.add_argument("--client-key", help="key of --client-cert")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, help="Trainer version profile (default %(default)s)")
    parser.add_argument(
        "--constraints",
        nargs="+",
        action="extend",
        metavar="DIR",
        help="templates, constraints and Provider objects to use (default: bundles/gatekeeper/<profile>)",
    )
    parser.add_argument("--parameters", metavar="FILE", help="YAML {<constraint name>: {<parameter>: value}}")
    parser.add_argument(
        "--variant",
        choices=(DEFAULT_VARIANT, EXTERNAL_DATA_VARIANT),
        default=DEFAULT_VARIANT,
        help=(
            "which install of the profile to evaluate: the default bundle (override mutability reads synced JobSets "
            "from --objects) or its external-data variant (asks the provider; default %(default)s)"
        ),
    )
    parser.add_argument(
        "--audit",
        action="store_true",
        help='evaluate the object as Gatekeeper\'s audit does (operation "", oldObject null, no userInfo)',
    )
    parser.add_argument("-o", "--output", choices=("json", "text"), default="text")
    parser.set_defaults(run=run)


def _provider(args: argparse.Namespace, policy_set: PolicySet, objects: list[dict[str, Any]]) -> ProviderClient:
    """The provider that answers every external_data call: a running one, or the provider's own
    handler over --objects. Its timeout is the Provider object's when the constraints carry one."""
    if args.provider_url:
        if not args.ca_file:
            raise InputError("--ca-file", "required with --provider-url")
        if bool(args.client_cert) != bool(args.client_key):
            raise InputError("--client-cert", "--client-cert and --client-key go together")
        cert = (args.client_cert, args.client_key) if args.client_cert else None
        timeouts = [p.timeout_seconds for p in policy_set.providers.values()]
        timeout = min(timeouts) if timeouts else DEFAULT_PROVIDER_TIMEOUT_SECONDS
        return HttpsProvider(args.provider_url, args.ca_file, timeout=timeout, client_cert=cert)
    return InProcessProvider(ProviderHandler(StaticJobSetSource(objects)).handle)


def _load_parameters(path: str) -> dict[str, Any]:
    doc = read_single(path)
    return doc.body


def _default_constraints(args: argparse.Namespace) -> Path:
    """What `kubectl apply -k` installs for the profile: the default bundle or its external-data variant."""
    bundle = Path(gatekeeper_bundle_dir(args.profile))
    return bundle / EXTERNAL_DATA_VARIANT if args.variant == EXTERNAL_DATA_VARIANT else bundle


def run(args: argparse.Namespace) -> int:
    constraint_dirs = args.constraints or [_default_constraints(args)]
    for directory in constraint_dirs:
        if not Path(directory).exists():
            raise InputError(str(directory), "no such constraints folder (unknown --profile?)")
    request = request_from_document(read_single(args.review))
    if args.audit:
        if request.object is None:
            raise InputError(args.review, "audit needs an object", field="object")
        request = audit_request(request.object)

    objects = [doc.body for path in args.objects for doc in read_documents(path)]
    policy_set = load_policy_set(constraint_dirs)
    if args.parameters:
        policy_set = with_parameters(policy_set, _load_parameters(args.parameters), args.parameters)
    with GatekeeperRunner(policy_set, objects=objects) as runner:
        runner.external_data.fallback = _provider(args, policy_set, objects)
        result = runner.review(request)
    if args.output == "json":
        print(json.dumps(result.as_json(), indent=2, sort_keys=True))
    else:
        _print_text(result)
    if result.errors:
        print(f"trainer-policy review: {result.errors[0]}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ALLOWED if result.allowed else EXIT_DENIED


def _print_text(result: ReviewResult) -> None:
    print("allowed" if result.allowed and not result.errors else "denied")
    for v in result.violations:
        print(f"[{v.enforcement_action}] {v.constraint}: {v.msg}")
    for error in result.errors:
        print(f"[error] {error}")
