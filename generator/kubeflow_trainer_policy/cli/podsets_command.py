"""`trainer-policy podsets`: what a TrainJob will request, computed by the budget rule's own Rego.

Only argparse is imported at load time; the engine and YAML readers are imported when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

EXIT_OK = 0
EXIT_ERROR = 2
TRAINER_API_GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "podsets",
        help="print a TrainJob's PodSets and total requests, as the budget rule computes them",
        description=(
            "Compute the PodSets of a TrainJob on its (Cluster)TrainingRuntime: per-Pod requests (Kubernetes' pod "
            "request formula), counts, total requests, Pods and trainer nodes, by evaluating the resource-budget "
            "template's Rego on the embedded OPA. Takes files (one or more YAML/JSON documents), folders and - "
            "(stdin); every TrainJob among them is reported with its file and document number, and the runtimes "
            "among them count as --objects. Exit 0, or 2 with one line on stderr per TrainJob that could not be "
            "computed (runtime missing, bad input)."
        ),
    )
    parser.add_argument(
        "trainjob",
        nargs="+",
        metavar="PATH",
        help="TrainJobs (trainer.kubeflow.org/v1alpha1): files, folders, or - for stdin",
    )
    parser.add_argument(
        "--objects",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="runtimes (TrainingRuntime, ClusterTrainingRuntime), files or folders, standing in for the cluster "
        "(default: none)",
    )
    parser.add_argument(
        "--profile", default=None, help="Trainer version profile whose bundle's Rego is used (default: v2.0)"
    )
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="output format (default %(default)s)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from kubeflow_trainer_policy.errors import InputError
    from kubeflow_trainer_policy.manifests import Manifest, Unreadable, iter_manifests, read_manifests
    from kubeflow_trainer_policy.paths import DEFAULT_PROFILE, gatekeeper_bundle_dir
    from kubeflow_trainer_policy.podsets.rego import PodSetsEngine

    items = list(iter_manifests(args.trainjob))
    single = len(args.trainjob) == 1 and not Path(args.trainjob[0]).is_dir() and len(items) == 1
    if single and isinstance(items[0], Unreadable):
        raise items[0].error
    given = [m for m in items if isinstance(m, Manifest)]
    trainjobs = [m for m in given if not _is_runtime(m.body)] if not single else given
    if not trainjobs and not any(isinstance(i, Unreadable) for i in items):
        raise InputError(", ".join(args.trainjob), "no TrainJob found")
    objects = [m.body for m in read_manifests(args.objects)] + [m.body for m in given if _is_runtime(m.body)]
    bundle = gatekeeper_bundle_dir(args.profile or DEFAULT_PROFILE)
    if not Path(bundle).is_dir():
        raise InputError(str(bundle), "no such bundle (unknown --profile?)")
    reports: list[dict[str, Any]] = []
    with PodSetsEngine.from_bundle(Path(bundle)) as engine:
        if single:
            report = _compute(engine, trainjobs[0], objects, "<stdin>" if args.trainjob[0] == "-" else args.trainjob[0])
            print(json.dumps(report, indent=2) if args.output == "json" else _table(report))
            return EXIT_OK
        for item in items:
            if isinstance(item, Unreadable):
                reports.append({"file": item.file, "index": 0, "error": str(item.error)})
            elif item in trainjobs:
                try:
                    report = _compute(engine, item, objects, item.source)
                except InputError as exc:
                    report = {"error": str(exc)}
                reports.append({"file": item.file, "index": item.index, **report})
    if args.output == "json":
        print(json.dumps(reports, indent=2))
    else:
        print("\n\n".join(_many(r) for r in reports))
    errors = [r for r in reports if "error" in r]
    for r in errors:
        print(f"trainer-policy podsets: {r['error']}", file=sys.stderr)
    return EXIT_ERROR if errors else EXIT_OK


def _is_runtime(body: dict[str, Any]) -> bool:
    group = str(body.get("apiVersion", "")).rpartition("/")[0]
    return body.get("kind") in RUNTIME_KINDS and group == TRAINER_API_GROUP


def _many(report: dict[str, Any]) -> str:
    where = f"{report['file']}#{report['index']}" if report["index"] else report["file"]
    return f"{where}: error: {report['error']}" if "error" in report else f"{where}\n{_table(report)}"


def _compute(engine: Any, manifest: Any, objects: list[dict[str, Any]], source: str) -> dict[str, Any]:
    from kubeflow_trainer_policy.admission import inventory_document
    from kubeflow_trainer_policy.errors import InputError
    from kubeflow_trainer_policy_provider.documents import dig

    trainjob = manifest.body
    group = str(trainjob.get("apiVersion", "")).rpartition("/")[0]
    if trainjob.get("kind") != "TrainJob" or group != TRAINER_API_GROUP:
        raise InputError(source, f"expected a TrainJob of {TRAINER_API_GROUP}", field="kind")
    namespace = dig(trainjob, "metadata", "namespace") or "default"
    trainjob = {**trainjob, "metadata": {**(trainjob.get("metadata") or {}), "namespace": namespace}}
    lookup = engine.runtime(inventory_document([_in_namespace(o, namespace) for o in objects]), trainjob)
    if not lookup["found"]:
        raise InputError(source, _missing(lookup, trainjob), field="spec.runtimeRef")
    result = engine.compute(trainjob, lookup["runtime"])
    if result["invalid"]:
        raise InputError(source, f"{result['invalid'][0]} is not a Kubernetes quantity")
    return _report(trainjob, lookup["runtime"], result)


def _in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A TrainingRuntime given without a namespace is taken as being in the TrainJob's (like `kubectl -n`)."""
    metadata = obj.get("metadata")
    if obj.get("kind") == "TrainingRuntime" and isinstance(metadata, dict) and not metadata.get("namespace"):
        return {**obj, "metadata": {**metadata, "namespace": namespace}}
    return obj


def _missing(lookup: dict[str, Any], trainjob: dict[str, Any]) -> str:
    if lookup["type"] == "Internal":
        ref = trainjob.get("spec", {}).get("runtimeRef", {}) or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        return f"no {kind} objects were given with --objects, so the runtime cannot be read"
    return f"{lookup['detail']} in --objects"


def _report(trainjob: dict[str, Any], runtime: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    from kubeflow_trainer_policy.podsets.model import formatted

    metadata = trainjob.get("metadata") or {}
    return {
        "trainJob": f"{metadata.get('namespace')}/{metadata.get('name')}",
        "runtime": {"kind": runtime.get("kind"), "name": (runtime.get("metadata") or {}).get("name")},
        "podSets": [{**ps, "singlePodRequests": formatted(ps["singlePodRequests"])} for ps in result["podSets"]],
        "totalRequests": formatted(result["totalRequests"]),
        "pods": result["pods"],
        "trainerNodes": result["trainerNodes"],
    }


def _requests(resources: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in resources.items()) or "-"


def _table(report: dict[str, Any]) -> str:
    rows = [("PODSET", "ANCESTOR", "COUNT", "REQUESTS PER POD")]
    for ps in report["podSets"]:
        rows.append((ps["name"], ps["ancestor"] or "-", str(ps["count"]), _requests(ps["singlePodRequests"])))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])), row[3]]) for row in rows]
    runtime = report["runtime"]
    lines.insert(0, f"TrainJob {report['trainJob']} on {runtime['kind']} {runtime['name']}")
    lines.append(
        f"TOTAL pods={report['pods']} trainerNodes={report['trainerNodes']} {_requests(report['totalRequests'])}"
    )
    return "\n".join(line.rstrip() for line in lines)
