"""The whole lint: `opa fmt` layout, strict mode, data references and METADATA of every emitted Rego module
(policies/, the ConstraintTemplates, each OPA bundle's decision.rego), spread over worker processes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.engine.workers import engine_workers
from kubeflow_trainer_policy.lint.modules import (
    LoadGroup,
    Module,
    annotation_errors,
    data_ref_errors,
    entry_modules,
    load_groups,
)
from kubeflow_trainer_policy.lint.rego_style import Problem, check_module
from kubeflow_trainer_policy.lint.strict import strict_problems

_PARSER: RegoParser | None = None


def _style(module: Module) -> list[Problem]:
    return check_module(module.path, module.text, entry=module.entry, test=module.test)


def _strict(module: Module) -> list[str]:
    global _PARSER
    if _PARSER is None:
        _PARSER = RegoParser()
    return [f"{module.path}: {p}" for p in strict_problems(_PARSER.parse_raw(module.path, module.text))]


def lint(root: Path) -> tuple[int, list[str]]:
    """(modules checked, problems), in the order: per load group, each module's layout and strict-mode
    problems, then the group's data references and METADATA; then each OPA bundle's entry module."""
    groups = load_groups(root)
    entries = entry_modules(root)
    # The templates carry the policies/ files' text: each text is checked once and reported under every path.
    styled_keys: dict[tuple[str, bool, bool], Module] = {}
    strict_first: dict[str, Module] = {}
    for module in [m for group in groups for m in group.modules] + entries:
        styled_keys.setdefault((module.text, module.entry, module.test), module)
        strict_first.setdefault(module.text, module)
    entry_groups = [LoadGroup(module.path, (module,)) for module in entries]
    # Parsing with OPA and the layout checks are CPU-bound and independent per module text.
    with engine_workers(len(strict_first)) as pool:
        styled_results = pool.map(_style, styled_keys.values(), chunksize=4)
        strict_results = pool.map(_strict, strict_first.values(), chunksize=4)
        annotation_results = pool.map(annotation_errors, groups + entry_groups)
        styled = dict(zip(styled_keys, styled_results, strict=True))
        strict_by_text = {
            text: (module.path, found)
            for (text, module), found in zip(strict_first.items(), strict_results, strict=True)
        }
        annotations = list(annotation_results)

    def module_problems(module: Module) -> list[str]:
        found = [str(replace(p, path=module.path)) for p in styled[(module.text, module.entry, module.test)]]
        first_path, strict_found = strict_by_text[module.text]
        return found + (strict_found if first_path == module.path else [])

    problems: list[str] = []
    parser = RegoParser()
    for group, group_annotations in zip(groups, annotations[: len(groups)], strict=True):
        for module in group.modules:
            problems += module_problems(module)
        problems += data_ref_errors(list(group.modules), parser)
        problems += group_annotations
    for module, entry_annotations in zip(entries, annotations[len(groups) :], strict=True):
        problems += module_problems(module)
        problems += entry_annotations
    return sum(len(g.modules) for g in groups) + len(entries), problems
