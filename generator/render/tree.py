"""The whole generated tree in memory, and writing or checking it against the working tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from generator.catalog import load_catalog
from generator.catalog.lib_cases import LIB_CASES
from generator.profiles import Profile, generated_profiles
from generator.render import docs, gatekeeper, rego, rego_tests, versions

POLICIES = "policies"
DOCS = "docs/policies"


def bundle_root(profile: Profile) -> str:
    return f"bundles/gatekeeper/{profile.name}"


@dataclass
class Tree:
    files: dict[str, str] = field(default_factory=dict)
    """Relative path (to the project root) -> content."""
    roots: list[str] = field(default_factory=list)
    """Folders the generator owns entirely: anything else in them is stale."""


def render_tree(profiles: list[Profile], unit_test_profile: Profile) -> Tree:
    rules = list(load_catalog())
    tree = Tree(roots=[POLICIES, DOCS, *(bundle_root(p) for p in profiles)])
    for lib in rego.all_libs():
        tree.files[f"{POLICIES}/{lib.path}"] = lib.source
        if lib.name in LIB_CASES:
            tree.files[f"{POLICIES}/lib/trainer/{lib.name}_test.rego"] = rego_tests.render_lib_tests(
                lib.name, LIB_CASES[lib.name]
            )
    for rule in rules:
        folder = f"{POLICIES}/{rule.id}"
        tree.files[f"{folder}/src.rego"] = rego.render_module(rule, unit_test_profile)
        tree.files[f"{folder}/src_test.rego"] = rego_tests.render_rule_tests(rule, unit_test_profile)
        tree.files[f"{DOCS}/{rule.id}.md"] = docs.rule_page(rule, generated_profiles(), unit_test_profile)
    tree.files[f"{DOCS}/README.md"] = docs.index_page(rules)
    for profile in profiles:
        for path, text in gatekeeper.bundle_files(rules, profile).items():
            tree.files[f"{bundle_root(profile)}/{path}"] = text
    tree.files[versions.LOCK] = versions.lock_text(rules, generated_profiles())
    return tree


def write_tree(tree: Tree, root: Path) -> list[str]:
    """Writes changed files and removes stale ones under the owned roots; returns what changed."""
    changed = drift(tree, root)
    for rel in changed:
        path = root / rel
        if rel in tree.files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tree.files[rel], encoding="utf-8")
        elif path.exists():
            path.unlink()
    for owned in tree.roots:
        for directory in sorted((root / owned).rglob("*"), reverse=True):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
    return changed


def drift(tree: Tree, root: Path) -> list[str]:
    """Paths whose content differs, that are missing, or that are stale under an owned root."""
    changed = []
    for rel, text in tree.files.items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            changed.append(rel)
    for owned in tree.roots:
        for path in sorted((root / owned).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel not in tree.files and "__pycache__" not in rel:
                changed.append(rel)
    return sorted(changed)
