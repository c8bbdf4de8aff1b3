"""The lint rules, one per module, each with its Regal-style id (`<category>/<name>`) and documented in
docs/lint.md. A rule is a function of one module that returns its violations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubeflow_trainer_policy.lint.modules import Module


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


Check = Callable[[Module], list[Violation]]


def all_rules() -> dict[str, Check]:
    from kubeflow_trainer_policy.lint.rules import (
        custom_missing_metadata,
        gatekeeper_data_reference,
        style_no_whitespace_comment,
    )

    return {
        rule.RULE: rule.check
        for rule in (custom_missing_metadata, gatekeeper_data_reference, style_no_whitespace_comment)
    }


def lint_modules(modules: list[Module]) -> list[Violation]:
    """Every rule over every module; a module text is checked once per kind and reported under each path."""
    rules = all_rules()
    seen: dict[tuple[str, bool, bool, bool], list[Violation]] = {}
    found: list[Violation] = []
    for module in modules:
        key = (module.text, module.entry, module.test, module.template)
        if key not in seen:
            seen[key] = [v for check in rules.values() for v in check(module)]
        found += [Violation(module.path, v.line, v.rule, v.message) for v in seen[key]]
    return found
