"""The rule catalog: every `Rule` defined in a module of generator/catalog/rules/, sorted by id.

Adding a rule = adding a module there (metadata, cases) and a jinja2 template under templates/;
no renderer changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from generator.catalog import rules as rules_package
from generator.catalog.model import Rule

TEMPLATES_DIR = Path(__file__).parent / "templates"
LIB_DIR = TEMPLATES_DIR / "lib"


@cache
def load_catalog() -> tuple[Rule, ...]:
    found: dict[str, Rule] = {}
    for info in sorted(pkgutil.iter_modules(rules_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Rule):
                if value.id in found and found[value.id] is not value:
                    raise ValueError(f"rule id {value.id!r} is defined twice")
                found[value.id] = value
    return tuple(found[k] for k in sorted(found))
