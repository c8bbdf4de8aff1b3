"""`python -m kubeflow_trainer_policy.lint [ROOT]`: style, data references and METADATA of every emitted Rego module."""

from __future__ import annotations

import sys
from pathlib import Path

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.lint.modules import annotation_errors, data_ref_errors, load_groups
from kubeflow_trainer_policy.lint.rego_style import check_module
from kubeflow_trainer_policy.paths import PROJECT_ROOT


def lint(root: Path) -> tuple[int, list[str]]:
    """(modules checked, problems)."""
    problems: list[str] = []
    parser = RegoParser()
    groups = load_groups(root)
    for group in groups:
        for module in group.modules:
            problems += map(str, check_module(module.path, module.text, entry=module.entry, test=module.test))
        problems += data_ref_errors(list(group.modules), parser)
        problems += annotation_errors(group)
    return sum(len(g.modules) for g in groups), problems


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else PROJECT_ROOT
    count, problems = lint(root)
    for problem in problems:
        print(problem)
    print(f"rego lint: {count} modules, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
