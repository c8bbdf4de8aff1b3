"""`python -m kubeflow_trainer_policy.lint [ROOT]`: `opa fmt` layout, strict mode, data references and METADATA of
every emitted Rego module (policies/, the ConstraintTemplates, each OPA bundle's decision.rego)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.lint.modules import (
    LoadGroup,
    annotation_errors,
    data_ref_errors,
    entry_modules,
    load_groups,
)
from kubeflow_trainer_policy.lint.rego_style import Problem, check_module
from kubeflow_trainer_policy.lint.strict import strict_problems
from kubeflow_trainer_policy.paths import PROJECT_ROOT


def lint(root: Path) -> tuple[int, list[str]]:
    """(modules checked, problems)."""
    problems: list[str] = []
    parser = RegoParser()
    groups = load_groups(root)
    seen: set[str] = set()
    styled: dict[tuple[str, bool, bool], list[Problem]] = {}
    for group in groups:
        for module in group.modules:
            # The templates carry the policies/ files' text: check each text once, report under each path.
            key = (module.text, module.entry, module.test)
            if key not in styled:
                styled[key] = check_module(module.path, module.text, entry=module.entry, test=module.test)
            problems += [str(replace(p, path=module.path)) for p in styled[key]]
            if module.text not in seen:
                seen.add(module.text)
                problems += [f"{module.path}: {p}" for p in strict_problems(parser.parse_raw(module.path, module.text))]
        problems += data_ref_errors(list(group.modules), parser)
        problems += annotation_errors(group)
    entries = entry_modules(root)
    for module in entries:
        problems += map(str, check_module(module.path, module.text, entry=False, test=False))
        problems += [f"{module.path}: {p}" for p in strict_problems(parser.parse_raw(module.path, module.text))]
        problems += annotation_errors(LoadGroup(module.path, (module,)))
    return sum(len(g.modules) for g in groups) + len(entries), problems


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else PROJECT_ROOT
    count, problems = lint(root)
    for problem in problems:
        print(problem)
    print(f"rego lint: {count} modules, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
