"""`python -m kubeflow_trainer_policy.lint [ROOT]`: the lint rules (lint/rules/) over every emitted Rego module."""

from __future__ import annotations

import sys
from pathlib import Path

from kubeflow_trainer_policy.lint.modules import all_modules
from kubeflow_trainer_policy.lint.rules import Violation, lint_modules
from kubeflow_trainer_policy.paths import PROJECT_ROOT

__all__ = ["lint", "main"]


def lint(root: Path) -> tuple[int, list[Violation]]:
    """(modules checked, violations)."""
    modules = all_modules(root)
    return len(modules), lint_modules(modules)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else PROJECT_ROOT
    count, violations = lint(root)
    for violation in violations:
        print(violation)
    print(f"rego lint: {count} modules, {len(violations)} problems")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
