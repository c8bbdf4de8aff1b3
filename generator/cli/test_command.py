"""`trainer-policy test`: Rego unit tests and gator-format suites on the engine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from generator.errors import EXIT_FAILED, InputError
from generator.paths import BUNDLES_DIR, POLICIES_DIR

if TYPE_CHECKING:
    from generator.testing.outcome import Coverage


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run the Rego unit tests and gator suites on the engine",
        description=(
            "Run every test_* rule of every *_test.rego and every gator-format Suite under the given folders "
            "(default: policies/ and bundles/). Ends with a line `N passed, N failed`."
        ),
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="folders to test (default: policies bundles)")
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
    from generator.testing.outcome import Coverage, TestOutcome
    from generator.testing.rego_tests import run_rego_tests
    from generator.testing.suites import find_suites, run_suite

    paths = [Path(p) for p in args.paths] or [p for p in (POLICIES_DIR, BUNDLES_DIR) if p.is_dir()]
    for path in paths:
        if not path.is_dir():
            raise InputError(str(path), "no such folder")
    if args.threshold is not None and not 0 <= args.threshold <= 100:
        raise InputError("--threshold", f"must be a percentage from 0 to 100, got {args.threshold}")
    coverage = Coverage() if args.coverage or args.threshold is not None else None
    outcomes: list[TestOutcome] = []
    for path in paths:
        outcomes += run_rego_tests(path, coverage)
        for suite in find_suites(path):
            outcomes += run_suite(suite)
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
