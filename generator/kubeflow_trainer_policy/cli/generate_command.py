"""`trainer-policy generate`: render profiles/<profile>/, bundles/gatekeeper/<profile>/ and docs/policies/ from
policies/."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from kubeflow_trainer_policy.errors import EXIT_FAILED, InputError
from kubeflow_trainer_policy.paths import PROJECT_ROOT, is_checkout

DIFF_LINES_PER_FILE = 60


def register(subparsers: argparse._SubParsersAction) -> None:
    from kubeflow_trainer_policy.profiles import PROFILES

    parser = subparsers.add_parser(
        "generate",
        help="render the profiles' libs, Gatekeeper bundles and docs from the rules under policies/",
        description=(
            "Render profiles/<profile>/profile.rego, bundles/gatekeeper/<profile>/ (ConstraintTemplates, "
            "Constraints, gator suites and samples), docs/policies/ and the README's tables from the rule folders "
            "under policies/ and the profiles. Files there that it did not generate are never deleted (it refuses "
            "instead). With --check, write nothing and exit 1 when a committed file differs from what the sources "
            "generate, naming the source to edit and showing the difference."
        ),
    )
    parser.add_argument(
        "--profile",
        action="append",
        metavar="P",
        help=f"profile to render bundles for, repeatable (default: every generated one; known: {', '.join(PROFILES)})",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; fail when the committed files drift (default: write)"
    )
    parser.set_defaults(run=run)


def rule_sources() -> dict[str, list[str]]:
    """Rule id -> the folder its generated files come from (src.rego and its METADATA, cases.py)."""
    from kubeflow_trainer_policy.catalog import load_catalog

    return {rule.id: [_relative(rule.folder) + "/"] for rule in load_catalog()}


def _relative(path: Path) -> str:
    try:
        return path.relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return str(path)


def catalog_files_for(rel: str, sources: dict[str, list[str]]) -> list[str]:
    """The sources to edit so that the generated file `rel` changes."""
    parts = rel.split("/")
    if parts[0] == "profiles":
        return ["generator/kubeflow_trainer_policy/profiles.py"]
    for rule_id, files in sources.items():
        if rule_id in parts or parts[-1] == f"{rule_id}.md":
            return [*files, "the libs it imports (policies/lib/trainer/)"]
    if rel.endswith("template_versions.json"):
        return ["the `custom.version` in the METADATA of the changed rule's policies/<rule>/src.rego"]
    return ["policies/ (every rule contributes to this file)"]


def _diff(rel: str, expected: str | None) -> list[str]:
    path = PROJECT_ROOT / rel
    try:
        committed = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        committed = []
    generated = (expected or "").splitlines(keepends=True)
    lines = list(difflib.unified_diff(committed, generated, f"a/{rel} (committed)", f"b/{rel} (generated)"))
    if len(lines) > DIFF_LINES_PER_FILE:
        lines = [*lines[:DIFF_LINES_PER_FILE], f"... {len(lines) - DIFF_LINES_PER_FILE} more diff lines\n"]
    return [line if line.endswith("\n") else line + "\n" for line in lines]


def _report_drift(changed: list[str], files: dict[str, str]) -> None:
    from kubeflow_trainer_policy.render.tree import is_generated

    sources = rule_sources()
    for rel in changed:
        if rel not in files:
            owner = "a stale generated file" if is_generated(PROJECT_ROOT / rel) else "NOT a generated file"
            print(
                f"out of date: {rel} is {owner}; `trainer-policy generate` removes only generated ones", file=sys.stderr
            )
        else:
            edit = " and ".join(catalog_files_for(rel, sources))
            print(
                f"out of date: {rel}: generated from {edit}; edit those, not this file, then run "
                "`trainer-policy generate`",
                file=sys.stderr,
            )
        sys.stderr.writelines(_diff(rel, files.get(rel)))


def run(args: argparse.Namespace) -> int:
    from kubeflow_trainer_policy.catalog import load_catalog
    from kubeflow_trainer_policy.profiles import UNIT_TEST_PROFILE, generated_profiles, get_profile
    from kubeflow_trainer_policy.render.tree import drift, render_tree, write_tree
    from kubeflow_trainer_policy.render.versions import LOCK, unbumped

    if not is_checkout():  # an installed copy: its shipped files are read-only data, site-packages is no checkout
        raise InputError(
            str(PROJECT_ROOT),
            "generate works in a source checkout of kubeflow-trainer-policy (it rewrites profiles/, bundles/, docs/ "
            "there); this is an installed copy",
        )
    try:
        profiles = [get_profile(p) for p in args.profile] if args.profile else generated_profiles()
    except KeyError as exc:
        raise InputError("--profile", str(exc.args[0])) from exc
    tree = render_tree(profiles, get_profile(UNIT_TEST_PROFILE))
    problems = unbumped(PROJECT_ROOT / LOCK, list(load_catalog()), generated_profiles())
    if args.check:
        changed = drift(tree, PROJECT_ROOT)
        _report_drift(changed, tree.files)
        for problem in problems:
            print(problem, file=sys.stderr)
        if changed or problems:
            print(f"{len(changed)} generated files are out of date: run `trainer-policy generate`", file=sys.stderr)
            return EXIT_FAILED
        print(f"{len(tree.files)} generated files are up to date")
        return 0
    if problems:
        raise InputError(LOCK, "; ".join(problems))
    changed = write_tree(tree, PROJECT_ROOT)
    print(f"{len(changed)} files written or removed, {len(tree.files)} generated files in total")
    return 0
