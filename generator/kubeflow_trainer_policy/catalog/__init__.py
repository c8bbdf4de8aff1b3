"""The rule catalog: one folder per rule under policies/, named after the rule's id, sorted by id.

A rule's folder holds everything about it: `src.rego` is its Rego, exactly what every profile's
ConstraintTemplate carries, with the rule's metadata (title, description, version, kinds, operations,
parameters, data needs) in the METADATA of its package; `src_test.rego` unit-tests its helpers; `cases.py`
defines `cases(profile)`, the table of cases from which its Rego tests, gator suite, samples and docs are
rendered. Adding a rule = adding a folder; no other file changes. The shared libs are policies/lib/trainer/.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from functools import cache
from pathlib import Path

from kubeflow_trainer_policy.catalog.metadata import MetadataError, parse_metadata, read_annotations
from kubeflow_trainer_policy.catalog.model import Case, Rule
from kubeflow_trainer_policy.paths import POLICIES_DIR
from kubeflow_trainer_policy.profiles import Profile

RULE_FILE = "src.rego"
CASES_FILE = "cases.py"
LIB_FOLDER = Path("lib") / "trainer"
LIB_DIR = POLICIES_DIR / LIB_FOLDER


class CatalogError(ValueError):
    """A rule folder that does not follow the catalog's layout."""


def rule_folders(policies_dir: Path) -> list[Path]:
    """Every folder of policies_dir with a src.rego."""
    return sorted(p.parent for p in policies_dir.glob(f"*/{RULE_FILE}"))


def load_cases_module(folder: Path) -> types.ModuleType:
    """A rule's cases.py, run as a module named after its folder (no bytecode is written into policies/). A rule
    that builds on another's cases loads that one with `cases_of(<rule id>)`."""
    path = folder / CASES_FILE
    name = f"trainer_policy_cases.{folder.name}"
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None) == str(path):
        return module
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"{path}: {exc.strerror or exc}") from exc
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def cases_of(rule_id: str, policies_dir: Path | None = None) -> types.ModuleType:
    """The cases module of the rule `rule_id` (policies/<rule_id>/cases.py), for a rule that builds on its cases."""
    return load_cases_module((policies_dir or POLICIES_DIR) / rule_id)


def _cases(folder: Path) -> Callable[[Profile], list[Case]]:
    cases = getattr(load_cases_module(folder), "cases", None)
    if not callable(cases):
        raise CatalogError(f"{folder / CASES_FILE}: defines no `cases(profile)` function")
    return cases


def load_rules(policies_dir: Path) -> tuple[Rule, ...]:
    """Every rule folder under `policies_dir`, with its metadata as OPA reads it from the modules there."""
    from kubeflow_trainer_policy.engine.rego_ast import RegoParser

    folders = rule_folders(policies_dir)
    modules = {
        path.relative_to(policies_dir).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(policies_dir.rglob("*.rego"))
        if not path.name.endswith("_test.rego")
    }
    parser = RegoParser()
    packages = {}
    for folder in folders:
        if not (folder / CASES_FILE).is_file():
            raise CatalogError(f"{folder}: no {CASES_FILE}")
        rel = (folder / RULE_FILE).relative_to(policies_dir).as_posix()
        packages[rel] = parser.parse(rel, modules[rel]).package
    annotations = read_annotations(modules, packages)
    rules: list[Rule] = []
    for folder in folders:
        rel = (folder / RULE_FILE).relative_to(policies_dir).as_posix()
        source = str(folder / RULE_FILE)
        try:
            meta = parse_metadata(annotations[rel], source)
        except MetadataError as exc:
            raise CatalogError(str(exc)) from exc
        if meta.id != folder.name:
            raise CatalogError(f"{source}: rule {meta.id!r} belongs in a folder named {meta.id}")
        rule = Rule(
            **{name: getattr(meta, name) for name in meta.__dataclass_fields__},
            cases=_cases(folder),
            package=packages[rel],
            source=modules[rel],
            folder=folder,
        )
        if rule.package != rule.template_name:
            raise CatalogError(f"{source}: package {rule.package} must be the template name {rule.template_name}")
        rules.append(rule)
    return tuple(sorted(rules, key=lambda r: r.id))


@cache
def load_catalog() -> tuple[Rule, ...]:
    return load_rules(POLICIES_DIR)
