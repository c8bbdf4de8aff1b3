"""`trainer-policy generate`: render policies/, bundles/gatekeeper/<profile>/ and docs/policies/ from the catalog."""

from __future__ import annotations

import argparse

from generator.catalog import load_catalog
from generator.errors import InputError
from generator.paths import PROJECT_ROOT
from generator.profiles import PROFILES, UNIT_TEST_PROFILE, generated_profiles, get_profile
from generator.render.tree import drift, render_tree, write_tree
from generator.render.versions import LOCK, unbumped


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="render the Rego, Gatekeeper bundles and docs from the rule catalog",
        description=(
            "Render policies/<profile>/ (Rego modules, libs and their unit tests), bundles/gatekeeper/<profile>/, "
            "docs/policies/ and the README's rule table from the rule catalog. With --check, write nothing and "
            "exit 1 when a committed file differs from what the catalog generates."
        ),
    )
    parser.add_argument(
        "--profile",
        action="append",
        metavar="P",
        help=f"profile(s) to render bundles for (default: every generated one; known: {', '.join(PROFILES)})",
    )
    parser.add_argument("--check", action="store_true", help="fail when the committed files drift from the catalog")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        profiles = [get_profile(p) for p in args.profile] if args.profile else generated_profiles()
    except KeyError as exc:
        raise InputError("--profile", str(exc.args[0])) from exc
    tree = render_tree(profiles, get_profile(UNIT_TEST_PROFILE))
    problems = unbumped(PROJECT_ROOT / LOCK, list(load_catalog()), generated_profiles())
    if args.check:
        changed = drift(tree, PROJECT_ROOT)
        for rel in changed:
            print(f"out of date: {rel}")
        for problem in problems:
            print(problem)
        if changed or problems:
            print(f"{len(changed)} generated files are out of date: run `trainer-policy generate`")
            return 1
        print(f"{len(tree.files)} generated files are up to date")
        return 0
    if problems:
        raise InputError(LOCK, "; ".join(problems))
    changed = write_tree(tree, PROJECT_ROOT)
    print(f"{len(changed)} files written or removed, {len(tree.files)} generated files in total")
    return 0
