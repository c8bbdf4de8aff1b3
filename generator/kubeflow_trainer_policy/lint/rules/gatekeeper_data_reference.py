"""gatekeeper/data-reference: a module Gatekeeper loads reads only `data.inventory` and `data.lib.*`.

Gatekeeper's rewriter refuses any other `data` reference in a template's rego or libs (the template then
never reaches `created`). Tests are exempt: Gatekeeper never loads them."""

from __future__ import annotations

from functools import cache

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.lint.modules import Module
from kubeflow_trainer_policy.lint.rules import Violation

RULE = "gatekeeper/data-reference"
ALLOWED = ("data.inventory", "data.lib")


@cache
def _parser() -> RegoParser:
    return RegoParser()


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line and not line.lstrip().startswith("#"):
            return number
    return 1


def check(module: Module) -> list[Violation]:
    if module.test or not module.template:
        return []
    facts = _parser().parse(module.path, module.text)
    return [
        Violation(
            module.path, _line_of(module.text, ref), RULE, f"{ref}: a template may read only {', '.join(ALLOWED)}.*"
        )
        for ref in sorted(facts.data_refs)
        if not ref.startswith(ALLOWED)
    ]
