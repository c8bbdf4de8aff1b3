"""The whole generated tree in memory, and writing or checking it against the working tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from generator.catalog import load_catalog
from generator.catalog.lib_cases import LIB_CASES
from generator.catalog.model import Rule
from generator.paths import PROJECT_ROOT
from generator.profiles import Profile, generated_profiles
from generator.render import docs, gatekeeper, rego, rego_tests, versions

POLICIES = "policies"
DOCS = "docs/policies"
README = "README.md"


def bundle_root(profile: Profile) -> str:
    return f"bundles/gatekeeper/{profile.name}"


def policies_root(profile: Profile) -> str:
    """policies/<profile>/: the profile's modules, libs and unit tests; `opa test policies/<profile>` runs them."""
    return f"{POLICIES}/{profile.name}"


@dataclass
class Tree:
    files: dict[str, str] = field(default_factory=dict)
    """Relative path (to the project root) -> content."""
    roots: list[str] = field(default_factory=list)
    """Folders the generator owns entirely: anything else in them is stale."""


def render_tree(profiles: list[Profile], docs_profile: Profile) -> Tree:
    """Everything generated for `profiles` (policies/<profile>/, bundles/gatekeeper/<profile>/), the docs
    (examples from `docs_profile`) and the template version lock."""
    rules = list(load_catalog())
    tree = Tree(roots=[DOCS, *(policies_root(p) for p in profiles), *(bundle_root(p) for p in profiles)])
    for profile in profiles:
        tree.files.update(_policies(rules, profile))
    for rule in rules:
        tree.files[f"{DOCS}/{rule.id}.md"] = docs.rule_page(rule, generated_profiles(), docs_profile)
    tree.files[f"{DOCS}/README.md"] = docs.index_page(rules)
    tree.files[README] = docs.readme_with_rule_table(_read(README), rules)
    for profile in profiles:
        for path, text in gatekeeper.bundle_files(rules, profile).items():
            tree.files[f"{bundle_root(profile)}/{path}"] = text
    tree.files[versions.LOCK] = versions.lock_text(rules, generated_profiles())
    return tree


def _policies(rules: list[Rule], profile: Profile) -> dict[str, str]:
    root = policies_root(profile)
    files: dict[str, str] = {}
    for lib in rego.all_libs():
        files[f"{root}/{lib.path}"] = lib.source
        if lib.name in LIB_CASES:
            files[f"{root}/lib/trainer/{lib.name}_test.rego"] = rego_tests.render_lib_tests(
                lib.name, LIB_CASES[lib.name]
            )
    for rule in rules:
        files[f"{root}/{rule.id}/src.rego"] = rego.render_module(rule, profile)
        files[f"{root}/{rule.id}/src_test.rego"] = rego_tests.render_rule_tests(rule, profile)
    return files


def _read(rel: str) -> str:
    path = PROJECT_ROOT / rel
    return path.read_text(encoding="utf-8") if path.is_file() else ""


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
