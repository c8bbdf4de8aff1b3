"""`trainer-policy test`: Rego unit tests and gator-format suites on the engine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kubeflow_trainer_policy.errors import EXIT_FAILED, InputError
from kubeflow_trainer_policy.paths import BUNDLES_DIR, EXTERNAL_DATA_VARIANT, POLICIES_DIR

if TYPE_CHECKING:
    from kubeflow_trainer_policy.testing.outcome import Coverage, TestOutcome


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run the Rego unit tests and gator suites on the engine",
        description=(
            "Run every test_* rule of every *_test.rego and every gator-format Suite under the given folders "
            "(default: each profile's policies/<profile>/ with its external-data variant "
            "policies/external-data/<profile>/, one engine per profile, and bundles/). Each PATH loads into an "
            "engine of its own. Ends with a line `N passed, N failed`."
        ),
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="folders to test (default: each policies/<profile> and bundles)"
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
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kubeflow_trainer_policy.testing.outcome import Coverage

    # Each group loads into one engine: a PATH alone, or by default a profile with its external-data variant.
    groups = [(Path(p),) for p in args.paths] or _default_groups()
    paths = [path for group in groups for path in group]
    for path in paths:
        if not path.is_dir():
            raise InputError(str(path), "no such folder")
    if args.threshold is not None and not 0 <= args.threshold <= 100:
        raise InputError("--threshold", f"must be a percentage from 0 to 100, got {args.threshold}")
    coverage = Coverage() if args.coverage or args.threshold is not None else None
    outcomes: list[TestOutcome] = []
    # Every profile has the same file names: the default run names them from the project root.
    base = None if args.paths else POLICIES_DIR.parent
    for result in _run_folders(groups, coverage is not None, base):
        folder_outcomes, folder_coverage, error = result
        if error is not None:
            raise InputError(*error)
        outcomes += folder_outcomes
        if coverage is not None and folder_coverage is not None:
            coverage.add(
                {
                    name: (folder_coverage.covered.get(name, set()), folder_coverage.not_covered.get(name, set()))
                    for name in folder_coverage.files()
                }
            )
    if not outcomes:
        where = ", ".join(map(str, paths)) or "policies/, bundles/"
        raise InputError(where, "no tests found (want *_test.rego files with test_* rules, or gator Suites)")
    for outcome in outcomes:
        if not outcome.passed:
            print(f"FAIL {outcome.name}: {outcome.detail}")
        elif not args.quiet:
            print(f"PASS {outcome.name}")
    failed = sum(not o.passed for o in outcomes)
    status = EXIT_FAILED if failed else 0
    if coverage is not None:
        status = max(status, _report_coverage(coverage, args.threshold))
    print(f"{len(outcomes) - failed} passed, {failed} failed")
    if failed:
        print(f"trainer-policy test: {failed} of {len(outcomes)} tests failed", file=sys.stderr)
    return status


FolderResult = tuple[list["TestOutcome"], "Coverage | None", tuple[str, str, str | None] | None]
"""A folder's outcomes and coverage, or the (source, message, field) of the InputError that stopped it."""


def _run_folders(groups: list[tuple[Path, ...]], coverage: bool, base: Path | None) -> list[FolderResult]:
    """Each group loads into an engine of its own, so groups run in worker processes, one per core; a single
    group (or a single core) runs here."""
    from kubeflow_trainer_policy.engine.workers import engine_workers, worker_count

    if worker_count(len(groups)) < 2:
        return [run_folder(group, coverage, base) for group in groups]
    with engine_workers(len(groups)) as pool:
        return list(pool.map(run_folder, groups, [coverage] * len(groups), [base] * len(groups)))


def run_folder(group: Path | tuple[Path, ...], coverage: bool, base: Path | None = None) -> FolderResult:
    """`opa test path...` (with coverage when asked) and every gator Suite under the paths."""
    from kubeflow_trainer_policy.testing.outcome import Coverage
    from kubeflow_trainer_policy.testing.rego_tests import run_rego_tests
    from kubeflow_trainer_policy.testing.suites import find_suites, run_suite

    paths = (group,) if isinstance(group, Path) else group
    folder_coverage = Coverage() if coverage else None
    try:
        outcomes = run_rego_tests(paths, folder_coverage, base)
        for path in paths:
            for suite in find_suites(path):
                outcomes += run_suite(suite)
    except InputError as exc:  # InputError does not survive pickling: it crosses back as data
        return [], None, (exc.source, exc.message, exc.field)
    return outcomes, folder_coverage, None


def _default_groups() -> list[tuple[Path, ...]]:
    """Per generated profile, policies/<profile>/ with its external-data variant policies/external-data/<profile>/
    (they load together, as `opa test --capabilities ... policies/<profile> policies/external-data/<profile>`;
    the profiles share package names, so each loads alone), then bundles/."""
    folders = POLICIES_DIR.glob("*") if POLICIES_DIR.is_dir() else []
    profiles = sorted(p for p in folders if p.is_dir() and p.name != EXTERNAL_DATA_VARIANT)
    groups = []
    for profile in profiles:
        variant = POLICIES_DIR / EXTERNAL_DATA_VARIANT / profile.name
        groups.append((profile, variant) if variant.is_dir() else (profile,))
    return [*groups, *([(BUNDLES_DIR,)] if BUNDLES_DIR.is_dir() else [])]


def _report_coverage(coverage: Coverage, threshold: float | None) -> int:
    for name, (covered, total) in coverage.files().items():
        missing = coverage.missing_lines(name)
        suffix = f" (not covered: {', '.join(map(str, missing))})" if missing else ""
        print(f"coverage {name}: {covered}/{total}{suffix}")
    print(f"coverage total: {coverage.percent:.1f}%")
    if threshold is not None and coverage.percent < threshold:
        print(f"coverage {coverage.percent:.1f}% is below the threshold {threshold:.1f}%")
        print(f"trainer-policy test: coverage {coverage.percent:.1f}% is below {threshold:.1f}%", file=sys.stderr)
        return EXIT_FAILED
    return 0
