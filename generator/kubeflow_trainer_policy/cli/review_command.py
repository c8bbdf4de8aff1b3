"""`trainer-policy review`: would Gatekeeper admit this request?"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubeflow_trainer_policy.cli.reports import unicode_safe, visible
from kubeflow_trainer_policy.errors import EXIT_ERROR, EXIT_FAILED, EXIT_OK, InputError
from kubeflow_trainer_policy.paths import (
    BUNDLES_DIR,
    DEFAULT_PROFILE,
    EXTERNAL_DATA_VARIANT,
    external_data_bundle_dir,
    gatekeeper_bundle_dir,
)

if TYPE_CHECKING:
    from kubeflow_trainer_policy.gatekeeper.external_data import ProviderClient
    from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet
    from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest
    from kubeflow_trainer_policy.gatekeeper.runner import ReviewResult

EXIT_ALLOWED, EXIT_DENIED = EXIT_OK, EXIT_FAILED
STDIN = "-"
STDIN_NAME = "<stdin>"
DEFAULT_VARIANT = "synced-jobsets"
DEFAULT_PROVIDER_TIMEOUT_SECONDS = 3.0
ENGINES = ("rego", "cel", "auto")
"""kubeflow_trainer_policy.gatekeeper.cel_engine.ENGINES (not imported here: the CLI starts without the runner)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review",
        help="evaluate admission requests the way Gatekeeper would",
        description=(
            "Evaluate admission.k8s.io/v1 AdmissionReviews (or bare objects, taken as CREATE) against the "
            "bundled constraints of a profile: files of one or more YAML/JSON documents, folders (every *.yaml, "
            "*.yml and *.json below them) or - for stdin. Each object is reported with its file and document "
            "number. Exit with the worst outcome: 0 all allowed, 1 one denied, 2 an input or engine error (one "
            "line each on stderr), also when no constraint at all was loaded."
        ),
    )
    parser.add_argument(
        "review",
        nargs="+",
        metavar="PATH",
        help="AdmissionReviews or bare Kubernetes objects: files, folders, or - for stdin",
    )
    parser.add_argument(
        "--objects",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="cluster objects (JobSets, runtimes, Namespaces), files or folders: fill data.inventory and back the "
        "in-process provider (default: none)",
    )
    parser.add_argument(
        "--provider-url",
        metavar="URL",
        help="call a running external data provider at this https:// URL instead of the in-process one, with "
        "the Provider's spec.timeout (seconds) as the deadline of each whole call (default: in-process)",
    )
    parser.add_argument(
        "--ca-file",
        metavar="FILE",
        help="PEM CA bundle that signed the provider's serving certificate "
        "(default: none; required with --provider-url)",
    )
    parser.add_argument(
        "--client-cert", metavar="FILE", help="PEM client certificate for a provider that requires mTLS (default: none)"
    )
    parser.add_argument("--client-key", metavar="FILE", help="PEM key of --client-cert (default: none)")
    parser.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        help="Trainer version profile: uses what bundles/gatekeeper/<profile>/templates and constraints install "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--constraints",
        nargs="+",
        action="extend",
        metavar="PATH",
        help="files or folders of templates, constraints and Provider objects to use instead of the profile's "
        "(default: the profile's bundle)",
    )
    parser.add_argument(
        "--parameters", metavar="FILE", help="YAML {<constraint name>: {<parameter>: value}} (default: none)"
    )
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
        "--engine",
        choices=ENGINES,
        default="rego",
        help="which engine judges each template, as Gatekeeper would: rego, every template by its Rego (Gatekeeper "
        "before 3.18); auto, by K8sNativeValidation (CEL) where the template carries it, else Rego (Gatekeeper "
        "3.18+); cel, only the templates that carry CEL (what bundles/vap enforces), the others named on stderr and "
        "not evaluated. CEL runs Kubernetes' own admission-policy code (tools/cel, built on first use, or "
        "$TRAINER_POLICY_CEL) (default %(default)s)",
    )
    parser.add_argument(
        "--audit",
        action="store_true",
        help="evaluate the object as Gatekeeper's audit does (no operation, oldObject or userInfo; default: off)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "junit"),
        default="text",
        help="report format: text (with a summary table for several objects), json, or junit (JUnit XML, one "
        "testcase per object; a denial is a failure) (default %(default)s)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 2 when no constraint matches an object of a Kubeflow API group (likely a typo in its kind or "
        "apiVersion, which Gatekeeper would admit unchecked); without it that is a warning on stderr (default: off)",
    )
    parser.set_defaults(run=run)


def known_profiles() -> list[str]:
    folder = BUNDLES_DIR / "gatekeeper"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def profile_files(profile: str, variant: str = DEFAULT_VARIANT) -> list[Path]:
    """What `kubectl apply -k` installs for the profile (or its external-data variant): the files its
    kustomizations list, not the samples and suites next to them, which hold no policy objects."""
    known = known_profiles()
    if profile not in known:
        raise InputError("--profile", f"unknown profile {profile!r} (known: {', '.join(known) or 'none'})")
    if variant == EXTERNAL_DATA_VARIANT:
        return kustomization_files(external_data_bundle_dir(profile))
    return kustomization_files(gatekeeper_bundle_dir(profile))


def kustomization_files(folder: Path, depth: int = 0) -> list[Path]:
    """The resource files of `folder`'s kustomization.yaml, following folder resources; the folder
    itself when it has none."""
    kustomization = folder / "kustomization.yaml"
    if not kustomization.is_file():
        return [folder]
    if depth > 8:
        raise InputError(str(kustomization), "kustomizations nested more than 8 deep", field="resources")
    from kubeflow_trainer_policy_provider.reader import read_single

    resources = read_single(kustomization).body.get("resources")
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise InputError(str(kustomization), "must be a list of file or folder names", field="resources")
    files: list[Path] = []
    for resource in resources:
        path = folder / resource
        files += kustomization_files(path, depth + 1) if path.is_dir() else [path]
    return files


def _provider(args: argparse.Namespace, policy_set: PolicySet, objects: list[dict[str, Any]]) -> ProviderClient:
    """The provider that answers every external_data call: a running one (flags already checked by
    _check_provider_flags), or the provider's own handler over --objects. Its deadline is the Provider
    object's spec.timeout when the constraints carry one."""
    from kubeflow_trainer_policy.gatekeeper.external_data import HttpsProvider, InProcessProvider

    if args.provider_url:
        cert = (args.client_cert, args.client_key) if args.client_cert else None
        timeouts = [p.timeout_seconds for p in policy_set.providers.values()]
        timeout = min(timeouts) if timeouts else DEFAULT_PROVIDER_TIMEOUT_SECONDS
        return HttpsProvider(args.provider_url, args.ca_file, timeout=timeout, client_cert=cert)
    return InProcessProvider.serving(objects)


def _check_provider_flags(args: argparse.Namespace) -> None:
    """--provider-url and its TLS files are checked before anything is evaluated."""
    if args.provider_url is None:
        for flag in ("ca_file", "client_cert", "client_key"):
            if getattr(args, flag):
                raise InputError(f"--{flag.replace('_', '-')}", "only used with --provider-url")
        return
    if not args.ca_file:
        raise InputError("--ca-file", "required with --provider-url")
    if bool(args.client_cert) != bool(args.client_key):
        raise InputError("--client-cert", "--client-cert and --client-key go together")
    from kubeflow_trainer_policy.gatekeeper.https_client import split_url, tls_client_context

    try:
        split_url(args.provider_url)
    except InputError as exc:
        raise InputError("--provider-url", f"{exc.message}, got {args.provider_url!r}") from exc
    tls_client_context(args.ca_file, (args.client_cert, args.client_key) if args.client_cert else None)


def run(args: argparse.Namespace) -> int:
    from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set, with_parameters
    from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
    from kubeflow_trainer_policy.manifests import Manifest, iter_manifests, read_manifests
    from kubeflow_trainer_policy_provider.reader import read_single

    sources: list[str | Path] = (
        list(args.constraints) if args.constraints else list(profile_files(args.profile, args.variant))
    )
    for source in sources:
        if not Path(source).exists():
            raise InputError(str(source), "no such file or folder")
    _check_provider_flags(args)
    items = list(iter_manifests(args.review))
    single = len(args.review) == 1 and not Path(args.review[0]).is_dir() and len(items) == 1
    if single and not isinstance(items[0], Manifest):
        raise items[0].error
    if not items:
        raise InputError(", ".join(args.review), "no YAML or JSON documents found")
    objects = [m.body for m in read_manifests(args.objects)]
    policy_set = load_policy_set(sources)
    if args.parameters:
        policy_set = with_parameters(policy_set, read_single(args.parameters).body, args.parameters)
    _note_unevaluated(args.engine, policy_set)
    with GatekeeperRunner(policy_set, objects=objects, engine=args.engine) as runner:
        runner.external_data.fallback = _provider(args, policy_set, objects)
        if not policy_set.constraints:  # after the templates compiled: their errors say more
            where = ", ".join(map(str, sources))
            raise InputError(
                where,
                "no Constraint found, so nothing would be enforced (want ConstraintTemplates "
                "and their Constraints; see --constraints and --profile)",
            )
        if single:
            assert isinstance(items[0], Manifest)
            request = _request(args, items[0], raw=args.review[0])
            result = runner.review(request)
            unmatched = _unmatched(args, request, result, policy_set, STDIN_NAME if args.review[0] == STDIN else None)
            if unmatched:
                raise unmatched
            return _report_single(args, result)
        outcomes = [_evaluate(args, runner, policy_set, item) for item in items]
    return _report_many(args.output, outcomes)


def _note_unevaluated(engine: str, policy_set: PolicySet) -> None:
    """With --engine cel, one line on stderr naming the constraints whose template has no CEL: not evaluated."""
    from kubeflow_trainer_policy.gatekeeper.cel_engine import evaluated

    left_out = sorted(c.name for c in policy_set.constraints if not evaluated(engine, policy_set.templates[c.kind]))
    if left_out:
        print(
            f"trainer-policy review: note: --engine {engine}: not evaluated, their templates carry no "
            f"K8sNativeValidation (CEL): {', '.join(left_out)}",
            file=sys.stderr,
        )


def _request(args: argparse.Namespace, manifest: Any, raw: str | None = None) -> Any:
    from kubeflow_trainer_policy.gatekeeper.review import audit_request, request_from_document
    from kubeflow_trainer_policy_provider.reader import Document

    # One document named by its file alone, as before; several by file#N.
    source = manifest.source if raw is None else ("<stdin>" if raw == STDIN else raw)
    request = request_from_document(Document(source, manifest.body))
    if args.audit:
        if request.object is None:
            raise InputError(source, "audit needs an object", field="object")
        request = audit_request(request.object)
    return request


def _evaluate(args: argparse.Namespace, runner: Any, policy_set: PolicySet, item: Any) -> ObjectOutcome:
    from kubeflow_trainer_policy.manifests import Unreadable

    if isinstance(item, Unreadable):
        return ObjectOutcome(item.file, 0, "", "", "", errors=[str(item.error)])
    identity = _identity(item.body)
    try:
        request = _request(args, item)
        result = runner.review(request)
    except InputError as exc:
        return ObjectOutcome(item.file, item.index, *identity, errors=[str(exc)])
    for failure in result.builtin_failures:
        print(visible(f"trainer-policy review: note: {item.source}: {failure}"), file=sys.stderr)
    unmatched = _unmatched(args, request, result, policy_set, item.source)
    errors = list(result.errors) + ([str(unmatched)] if unmatched else [])
    return ObjectOutcome(item.file, item.index, *identity, violations=result.violations, errors=errors)


def _unmatched(
    args: argparse.Namespace, request: AdmissionRequest, result: ReviewResult, policy_set: PolicySet, where: str | None
) -> InputError | None:
    """With --strict, the error for an object of a Kubeflow group that no constraint matched; without it, a warning
    on stderr and None. `where` names the object (its file alone when None)."""
    unmatched = "" if result.matched or result.errors else unmatched_kubeflow_object(request, policy_set)
    if not unmatched:
        return None
    where = where or args.review[0]
    if args.strict:
        return InputError(where, unmatched)
    print(
        visible(f"trainer-policy review: warning: {where}: {unmatched} (--strict makes this an error)"), file=sys.stderr
    )
    return None


def _identity(body: dict[str, Any]) -> tuple[str, str, str]:
    """kind, namespace, name of the object under review (an AdmissionReview's object or oldObject)."""
    obj = body
    if body.get("kind") == "AdmissionReview" and isinstance(body.get("request"), dict):
        request = body["request"]
        obj = request.get("object") or request.get("oldObject") or {}
        if not isinstance(obj, dict):
            obj = {}
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return (
        str(obj.get("kind") or ""),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or metadata.get("generateName") or ""),
    )


@dataclass
class ObjectOutcome:
    file: str
    index: int
    """The document's number in its file, from 1; 0 when the whole file could not be read."""
    kind: str
    namespace: str
    name: str
    violations: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.errors:
            return "error"
        return "denied" if any(v.enforcement_action == "deny" for v in self.violations) else "allowed"

    @property
    def source(self) -> str:
        return f"{self.file}#{self.index}" if self.index else self.file

    @property
    def object_name(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "file": self.file,
            "index": self.index,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "outcome": self.outcome,
            "allowed": self.outcome == "allowed",
            "violations": [v.as_json() for v in self.violations],
        }
        if self.errors:
            body["errors"] = self.errors
        return body


OUTCOME_EXIT = {"allowed": EXIT_ALLOWED, "denied": EXIT_DENIED, "error": EXIT_ERROR}


def _report_single(args: argparse.Namespace, result: ReviewResult) -> int:
    """One document: the report this command has always printed (json: {allowed, violations})."""
    if args.output == "json":
        print(json.dumps(unicode_safe(result.as_json()), indent=2, sort_keys=True))
    elif args.output == "junit":
        name = args.review[0] if args.review[0] != STDIN else "<stdin>"
        outcome = ObjectOutcome(name, 1, "", "", "", list(result.violations), list(result.errors))
        print(_junit([outcome]), end="")
    else:
        _print_text(result)
    for failure in result.builtin_failures:
        print(visible(f"trainer-policy review: note: {failure}"), file=sys.stderr)

    if result.errors:
        print(visible(f"trainer-policy review: {result.errors[0]}"), file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ALLOWED if result.allowed else EXIT_DENIED


KUBEFLOW_GROUP_SUFFIX = "kubeflow.org"


def unmatched_kubeflow_object(request: AdmissionRequest, policy_set: PolicySet) -> str:
    """Why an object of a Kubeflow API group that no constraint matched is suspicious ("" when it is not one): a
    `kind: Trainjob` or an apiVersion without its version is admitted by Gatekeeper without any check."""
    obj = request.object if request.object is not None else request.old_object
    if not isinstance(obj, dict):
        return ""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    # Any letter case: `Trainer.Kubeflow.org` is not the group Gatekeeper matches, so nothing checks it.
    if not isinstance(api_version, str) or KUBEFLOW_GROUP_SUFFIX not in api_version.lower():
        return ""
    group = api_version.rpartition("/")[0]
    known = sorted(
        {
            (g, k)
            for c in policy_set.constraints
            for entry in (c.match.get("kinds") or [])
            if isinstance(entry, dict)
            for g in entry.get("apiGroups") or []
            for k in entry.get("kinds") or []
        }
    )
    hints = []
    if not group:
        hints.append(f"apiVersion {api_version!r} has no version (want <group>/<version>)")
    elif group != group.lower():
        hints.append(f"API group {group!r} is not {group.lower()!r} (groups are matched as written, in lower case)")
    close = sorted({k for _, k in known if isinstance(kind, str) and k.lower() == kind.lower() and k != kind})
    if close:
        hints.append(f"kind {kind!r} is not {close[0]!r} (kinds are case-sensitive)")
    kinds = ", ".join(sorted({k for g, k in known if g == group or not group})) or "none"
    hint = "; ".join(hints) if hints else f"the constraints here match these kinds of its group: {kinds}"
    return (
        f"no constraint matches kind {kind!r} of apiVersion {api_version!r}, so Gatekeeper would admit it "
        f"without any check: {hint}"
    )


def _report_many(output: str, outcomes: list[ObjectOutcome]) -> int:
    counts = {key: sum(o.outcome == key for o in outcomes) for key in ("allowed", "denied", "error")}
    if output == "json":
        body: dict[str, Any] = {
            "allowed": counts["denied"] == counts["error"] == 0,
            "violations": [v.as_json() for o in outcomes for v in o.violations],
            "results": [o.as_json() for o in outcomes],
            "summary": {"objects": len(outcomes), **counts},
        }
        errors = [f"{o.source}: {e}" for o in outcomes for e in o.errors]
        if errors:
            body["errors"] = errors
        print(json.dumps(unicode_safe(body), indent=2, sort_keys=True))
    elif output == "junit":
        print(_junit(outcomes), end="")
    else:
        _print_many(outcomes, counts)
    for o in outcomes:
        for error in o.errors:
            print(visible(f"trainer-policy review: {error}"), file=sys.stderr)
    return max((OUTCOME_EXIT[o.outcome] for o in outcomes), default=EXIT_ALLOWED)


def _print_many(outcomes: list[ObjectOutcome], counts: dict[str, int]) -> None:
    from kubeflow_trainer_policy.cli.reports import table

    for o in outcomes:
        print(visible(f"{o.source} {o.kind or '?'} {o.object_name or '?'}: {o.outcome}"))
        for v in o.violations:
            print(visible(f"  [{v.enforcement_action}] {v.constraint}: {v.msg}"))
        for error in o.errors:
            print(visible(f"  [error] {error}"))
    rows = [
        (o.file, str(o.index or "-"), o.kind or "-", o.object_name or "-", o.outcome, str(len(o.violations)))
        for o in outcomes
    ]
    print()
    print(table(("FILE", "DOC", "KIND", "NAME", "RESULT", "VIOLATIONS"), rows))
    errors = f"{counts['error']} error" + ("" if counts["error"] == 1 else "s")
    print(f"{len(outcomes)} objects: {counts['allowed']} allowed, {counts['denied']} denied, {errors}")


def _junit(outcomes: list[ObjectOutcome]) -> str:
    """One testsuite per file, one testcase per object: a denial is a failure, an error an error, warn and
    dryrun violations are the testcase's output."""
    from kubeflow_trainer_policy.cli.reports import Case, Suite, junit_xml

    suites: dict[str, Suite] = {}
    for o in outcomes:
        lines = [f"[{v.enforcement_action}] {v.constraint}: {v.msg}" for v in o.violations]
        denials = [line for v, line in zip(o.violations, lines, strict=True) if v.enforcement_action == "deny"]
        others = [line for v, line in zip(o.violations, lines, strict=True) if v.enforcement_action != "deny"]
        name = " ".join(part for part in (f"#{o.index}" if o.index else "", o.kind, o.object_name) if part)
        case = Case(
            classname=o.file,
            name=name or o.file,
            failure=f"denied: {denials[0]}" if denials and not o.errors else None,
            error=o.errors[0] if o.errors else None,
            detail="\n".join(o.errors or denials),
            output="\n".join(others),
            failure_type="denied",
        )
        suites.setdefault(o.file, Suite(o.file)).cases.append(case)
    return junit_xml("trainer-policy review", list(suites.values()))


def _print_text(result: ReviewResult) -> None:
    print("allowed" if result.allowed and not result.errors else "denied")
    for v in result.violations:
        print(visible(f"[{v.enforcement_action}] {v.constraint}: {v.msg}"))
    for error in result.errors:
        print(visible(f"[error] {error}"))
