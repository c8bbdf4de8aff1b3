"""`trainer-policy test`: Rego unit tests and gator-format suites on the engine."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from kubeflow_trainer_policy.errors import EXIT_FAILED, InputError
from kubeflow_trainer_policy.paths import BUNDLES_DIR, EXTERNAL_DATA_DIR, GATEKEEPER_DIR, POLICIES_DIR, PROFILES_DIR

if TYPE_CHECKING:
    from kubeflow_trainer_policy.testing.outcome import Coverage, TestOutcome


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run the Rego unit tests and gator suites on the engine",
        description=(
            "Run every test_* rule of every *_test.rego and every gator-format Suite under the given folders. "
            "By default: per profile, policies/ with profiles/<profile>/ (as `opa test policies/ "
            "profiles/<profile>/` loads them) and every rule's cases as Rego tests, one engine per profile; then "
            "the suites under bundles/. Each PATH loads into an engine of its own. Ends with a line "
            "`N passed, N failed`."
        ),
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="folders to test (default: policies/ per profile, and bundles)"
    )
    parser.add_argument(
        "--profile",
        action="append",
        metavar="P",
        help="without PATHs: test only this profile (policies/ with profiles/P/, and bundles/gatekeeper/P), "
        "repeatable (default: every profile)",
    )
    parser.add_argument(
        "--coverage", action="store_true", help="report line coverage of the non-test Rego modules (default: off)"
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="PCT",
        help="fail when line coverage is below this percentage, 0 to 100; implies --coverage (default: none)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print failures only (default: every test)")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "junit", "json"),
        default="text",
        help="report on stdout: text (each test, a table per folder, then `N passed, N failed`), junit (JUnit XML, "
        "one testsuite per folder) or json; with junit and json the `N passed, N failed` line goes to stderr "
        "(default %(default)s)",
    )
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class Group:
    """Folders loaded into one engine, and the profile whose rule cases run with them as Rego tests (if any)."""

    paths: tuple[Path, ...]
    profile: str | None = None
    label: str = ""


def run(args: argparse.Namespace) -> int:
    from kubeflow_trainer_policy.testing.outcome import Coverage

    # Each group loads into one engine: a PATH alone, or by default policies/ with one profile.
    if args.paths and args.profile:
        raise InputError("--profile", "selects the default folders: give PATHs or --profile, not both")
    groups = [Group((Path(p),), None, _display(Path(p))) for p in args.paths] or _default_groups(args.profile)
    paths = [path for group in groups for path in group.paths]
    for path in paths:
        if not path.is_dir():
            raise InputError(str(path), "no such folder")
    if args.threshold is not None and not 0 <= args.threshold <= 100:
        raise InputError("--threshold", f"must be a percentage from 0 to 100, got {args.threshold}")
    coverage = Coverage() if args.coverage or args.threshold is not None else None
    outcomes: list[TestOutcome] = []
    by_folder: list[tuple[Path, list[TestOutcome]]] = []
    # Every profile has the same file names: the default run names them from the project root.
    base = None if args.paths else POLICIES_DIR.parent
    for group, result in zip(groups, _run_folders(groups, coverage is not None, base), strict=True):
        folder_outcomes, folder_coverage, error = result
        if error is not None:
            raise InputError(*error)
        outcomes += folder_outcomes
        by_folder.append((group.label, folder_outcomes))
        if coverage is not None and folder_coverage is not None:
            coverage.add(
                {
                    name: (folder_coverage.covered.get(name, set()), folder_coverage.not_covered.get(name, set()))
                    for name in folder_coverage.files()
                }
            )
    if not outcomes:
        where = ", ".join(map(str, paths)) or "policies/, profiles/, bundles/"
        raise InputError(where, "no tests found (want *_test.rego files with test_* rules, or gator Suites)")
    failed = sum(not o.passed for o in outcomes)
    status = EXIT_FAILED if failed else 0
    from kubeflow_trainer_policy.cli.reports import unicode_safe, visible

    if args.output == "junit":
        print(_junit(by_folder), end="")
    elif args.output == "json":
        print(json.dumps(unicode_safe(_json(by_folder, coverage)), indent=2, sort_keys=True))
    else:
        for outcome in outcomes:  # names and details from suite files and prints: no terminal escapes raw
            if not outcome.passed:
                print(visible(f"FAIL {outcome.name}: {outcome.detail}", keep="\n"))
            elif not args.quiet:
                print(visible(f"PASS {outcome.name}"))
        if len(by_folder) > 1 or not args.quiet:
            print(_table(by_folder))
    if coverage is not None:
        status = max(
            status, _report_coverage(coverage, args.threshold, sys.stdout if args.output == "text" else sys.stderr)
        )
    print(f"{len(outcomes) - failed} passed, {failed} failed", file=sys.stdout if args.output == "text" else sys.stderr)
    if failed:
        print(f"trainer-policy test: {failed} of {len(outcomes)} tests failed", file=sys.stderr)
    return status


FolderResult = tuple[list["TestOutcome"], "Coverage | None", tuple[str, str, str | None] | None]
"""A folder's outcomes and coverage, or the (source, message, field) of the InputError that stopped it."""


def _run_folders(groups: list[Group], coverage: bool, base: Path | None) -> list[FolderResult]:
    """Each group loads into an engine of its own, so groups run in worker processes, one per core; a single
    group (or a single core) runs here."""
    from kubeflow_trainer_policy.engine.workers import engine_workers, worker_count

    if worker_count(len(groups)) < 2:
        return [run_folder(group, coverage, base) for group in groups]
    with engine_workers(len(groups)) as pool:
        return list(pool.map(run_folder, groups, [coverage] * len(groups), [base] * len(groups)))


def run_folder(group: Group | Path, coverage: bool, base: Path | None = None) -> FolderResult:
    """`opa test path...` (with coverage when asked; with the profile's rule cases as Rego tests) and every gator
    Suite under the paths."""
    from kubeflow_trainer_policy.testing.outcome import Coverage
    from kubeflow_trainer_policy.testing.rego_tests import case_test_files, run_rego_tests
    from kubeflow_trainer_policy.testing.suites import find_suites, run_suite

    group = Group((group,)) if isinstance(group, Path) else group
    paths = group.paths
    folder_coverage = Coverage() if coverage else None
    try:
        extra = case_test_files(group.profile) if group.profile else []
        outcomes = run_rego_tests(paths, folder_coverage, base, extra)
        for path in paths:
            for suite in find_suites(path):
                outcomes += run_suite(suite)
    except InputError as exc:  # InputError does not survive pickling: it crosses back as data
        return [], None, (exc.source, exc.message, exc.field)
    return outcomes, folder_coverage, None


def _default_groups(selected: list[str] | None = None) -> list[Group]:
    """Per profile (profiles/<profile>/), policies/ with the profile's lib and the rules' cases as Rego tests (the
    profiles share package names, so each loads alone), then bundles/ (or, for `selected` profiles, theirs)."""
    folders = sorted(p for p in (PROFILES_DIR.glob("*") if PROFILES_DIR.is_dir() else []) if p.is_dir())
    unknown = sorted(set(selected or ()) - {p.name for p in folders})
    if unknown:
        known = ", ".join(p.name for p in folders)
        raise InputError("--profile", f"unknown profile {unknown[0]!r} (known: {known})")
    groups = [
        Group((POLICIES_DIR, profile), profile.name, f"policies + profiles/{profile.name}")
        for profile in folders
        if not selected or profile.name in selected
    ]
    bundles = (
        [BUNDLES_DIR]
        if not selected
        else [BUNDLES_DIR / kind / name for name in sorted(selected) for kind in (GATEKEEPER_DIR, EXTERNAL_DATA_DIR)]
    )
    return [*groups, *(Group((folder,), None, _display(folder)) for folder in bundles if folder.is_dir())]


def _report_coverage(coverage: Coverage, threshold: float | None, out: TextIO) -> int:
    for name, (covered, total) in coverage.files().items():
        missing = coverage.missing_lines(name)
        suffix = f" (not covered: {', '.join(map(str, missing))})" if missing else ""
        print(f"coverage {name}: {covered}/{total}{suffix}", file=out)
    print(f"coverage total: {coverage.percent:.1f}%", file=out)
    if threshold is not None and coverage.percent < threshold:
        print(f"coverage {coverage.percent:.1f}% is below the threshold {threshold:.1f}%", file=out)
        print(f"trainer-policy test: coverage {coverage.percent:.1f}% is below {threshold:.1f}%", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _split(name: str) -> tuple[str, str]:
    """(classname, name): `data.pkg.test_x` -> (`data.pkg`, `test_x`); `suite.yaml:test/case` -> (`suite.yaml:test`,
    `case`); anything else (a folder that did not load) stands alone."""
    if name.startswith("data.") and "." in name[5:]:
        head, _, tail = name.rpartition(".")
        return head, tail
    if ":" in name and "/" in name.rpartition(":")[2]:
        head, _, tail = name.rpartition("/")
        return head, tail
    return name, name


def _junit(by_folder: list[tuple[str, list[TestOutcome]]]) -> str:
    from kubeflow_trainer_policy.cli.reports import Case, Suite, junit_xml

    suites = []
    for folder, outcomes in by_folder:
        cases = []
        for outcome in outcomes:
            classname, name = _split(outcome.name)
            failure = None if outcome.passed else (outcome.detail or "failed")
            cases.append(Case(classname=classname, name=name, failure=failure, detail=outcome.detail))
        suites.append(Suite(folder, cases))
    return junit_xml("trainer-policy test", suites)


def _json(by_folder: list[tuple[str, list[TestOutcome]]], coverage: Coverage | None) -> dict[str, object]:
    tests = [
        {"folder": folder, "name": o.name, "passed": o.passed, **({"detail": o.detail} if o.detail else {})}
        for folder, outcomes in by_folder
        for o in outcomes
    ]
    failed = sum(not t["passed"] for t in tests)
    body: dict[str, object] = {"passed": len(tests) - failed, "failed": failed, "tests": tests}
    if coverage is not None:
        body["coverage"] = {"percent": round(coverage.percent, 2)}
    return body


def _table(by_folder: list[tuple[str, list[TestOutcome]]]) -> str:
    from kubeflow_trainer_policy.cli.reports import table

    rows = []
    for folder, outcomes in by_folder:
        failed = sum(not o.passed for o in outcomes)
        rows.append((folder, str(len(outcomes) - failed), str(failed)))
    return table(("FOLDER", "PASSED", "FAILED"), rows)


def _display(folder: Path) -> str:
    """A shipped folder by its place in the package or checkout (bundles), any other as given."""
    try:
        return folder.resolve().relative_to(POLICIES_DIR.parent.resolve()).as_posix()
    except ValueError:
        return str(folder)
