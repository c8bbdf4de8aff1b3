"""The rule catalog: one folder per rule under generator/kubeflow_trainer_policy/catalog/rules/, sorted by id.

A rule's folder is named after its id (`trainjob-name` -> `rules/trainjob_name/`) and holds everything
about it: `__init__.py` defines `RULE` (metadata, parameters, data needs, its per-profile settings and its
cases) and `template.rego.j2` is its Rego. Adding a rule = adding a folder; no other file changes.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from kubeflow_trainer_policy.catalog.model import Rule, folder_for
from kubeflow_trainer_policy.profiles import PROFILES

RULES_DIR = Path(__file__).parent / "rules"
RULES_PACKAGE = "kubeflow_trainer_policy.catalog.rules"
TEMPLATE_FILE = "template.rego.j2"
LIB_DIR = Path(__file__).parent / "templates" / "lib"


class CatalogError(ValueError):
    """A rule folder that does not follow the catalog's layout."""


def _import(folder: Path, package: str | None) -> ModuleType:
    if package is not None:
        return importlib.import_module(f"{package}.{folder.name}")
    name = f"_trainer_policy_rule_{folder.name}"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[])
    if spec is None or spec.loader is None:
        raise CatalogError(f"{folder}: cannot import __init__.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_rules(rules_dir: Path, package: str | None = None) -> tuple[Rule, ...]:
    """Every rule folder under `rules_dir` (imported as `package.<folder>` when given, else by path)."""
    rules: list[Rule] = []
    for folder in sorted(p for p in rules_dir.iterdir() if (p / "__init__.py").is_file()):
        rule = getattr(_import(folder, package), "RULE", None)
        if not isinstance(rule, Rule):
            raise CatalogError(f"{folder / '__init__.py'}: defines no `RULE = Rule(...)`")
        if folder.name != folder_for(rule.id):
            raise CatalogError(f"{folder}: rule {rule.id!r} belongs in a folder named {folder_for(rule.id)}")
        if not (folder / TEMPLATE_FILE).is_file():
            raise CatalogError(f"{folder}: no {TEMPLATE_FILE}")
        missing = [name for name in PROFILES if rule.settings and name not in rule.settings]
        if missing:
            raise CatalogError(f"{folder / '__init__.py'}: RULE.settings has no entry for {', '.join(missing)}")
        rules.append(dataclasses.replace(rule, folder=folder))
    return tuple(sorted(rules, key=lambda r: r.id))


@cache
def load_catalog() -> tuple[Rule, ...]:
    return load_rules(RULES_DIR, RULES_PACKAGE)
