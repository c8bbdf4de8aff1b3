"""Rego modules: one per rule and profile (jinja2), plus the shared libs under lib.trainer.*."""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from kubeflow_trainer_policy.catalog import LIB_DIR, TEMPLATE_FILE
from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy.render.header import header


@dataclass(frozen=True)
class Lib:
    name: str
    source: str

    @property
    def path(self) -> str:
        """Relative to policies/."""
        return f"lib/trainer/{self.name}.rego"


def _comment(text: str, indent: int) -> str:
    """A text as `#`-comment lines for a METADATA block (wrapped, no trailing spaces)."""
    lines = textwrap.wrap(" ".join(text.split()), width=100, break_on_hyphens=False, break_long_words=False)
    return "\n".join(f"#{' ' * indent}{line}" for line in lines)


def yaml_scalar(value: str) -> str:
    """A METADATA value as a YAML scalar: plain when YAML reads it back unchanged, else double-quoted.

    OPA parses METADATA as YAML and refuses the module when that fails (a plain `title: a: b` is a mapping
    error), so every value a template fills in goes through here."""
    text = " ".join(str(value).split())
    try:
        plain_ok = yaml.safe_load(f"k: {text}\n") == {"k": text}
    except yaml.YAMLError:
        plain_ok = False
    return text if plain_ok and " #" not in text else json.dumps(text)


@cache
def _environment(rules_dir: Path) -> jinja2.Environment:
    """Templates are named `<rule folder>/template.rego.j2`, so a variant rule can include its base's."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(rules_dir)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["comment"] = _comment
    env.filters["yaml_scalar"] = yaml_scalar
    env.filters["tojson"] = lambda value: json.dumps(value)
    return env


def render_module(rule: Rule, profile: Profile) -> str:
    """The rule's entry module for a profile: generated header, then the template's Rego."""
    settings = rule.settings.get(profile.name)
    variables: dict[str, Any] = {"rule": rule, "profile": profile, "settings": settings, **rule.template_vars}
    if rule.folder is None:
        raise ValueError(f"rule {rule.id} was not loaded from a catalog folder")
    template = _environment(rule.folder.parent).get_template(f"{rule.folder.name}/{TEMPLATE_FILE}")
    body = template.render(**variables)
    return header(f"generator/catalog (rule {rule.id}, profile {profile.name})") + "\n" + _tidy(body)


def lib(name: str) -> Lib:
    source = (LIB_DIR / f"{name}.rego").read_text(encoding="utf-8")
    return Lib(name, header(f"generator/catalog/templates/lib/{name}.rego") + "\n" + _tidy(source))


def all_libs() -> list[Lib]:
    return [lib(p.stem) for p in sorted(LIB_DIR.glob("*.rego")) if not p.stem.endswith("_test")]


def lib_tests() -> list[Lib]:
    """The hand-written unit tests of the libs (`<lib>_test.rego` beside each lib), copied out as they are."""
    return [
        Lib(p.stem, header(f"generator/catalog/templates/lib/{p.name}") + "\n" + _tidy(p.read_text(encoding="utf-8")))
        for p in sorted(LIB_DIR.glob("*_test.rego"))
    ]


def _tidy(text: str) -> str:
    """No trailing spaces, at most one blank line in a row, one final newline."""
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if not line and out and not out[-1]:
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


LIB_IMPORT = re.compile(r"^import data\.lib\.trainer\.(\w+)$", re.MULTILINE)
EXTERNAL_DATA_CALL = re.compile(r"^[^#\n]*\bexternal_data\(", re.MULTILINE)


def calls_external_data(source: str) -> bool:
    """Whether a module calls Gatekeeper's external_data builtin (outside comments)."""
    return EXTERNAL_DATA_CALL.search(source) is not None


def shipped_libs(rule: Rule, module: str) -> list[Lib]:
    """The libs a template ships with `module`: those of `rule.libs` it imports, directly or through another
    lib, in the rule's order (a profile whose Rego needs fewer libs ships fewer). A lib imported but not
    declared in `rule.libs` is an error: the template would not compile in Gatekeeper."""
    needed: set[str] = set()
    pending = LIB_IMPORT.findall(module)
    while pending:
        name = pending.pop()
        if name not in needed:
            needed.add(name)
            pending += LIB_IMPORT.findall(lib(name).source)
    undeclared = sorted(needed - set(rule.libs))
    if undeclared:
        raise ValueError(f"rule {rule.id} imports lib {', '.join(undeclared)} without listing it in Rule.libs")
    return [lib(name) for name in rule.libs if name in needed]
