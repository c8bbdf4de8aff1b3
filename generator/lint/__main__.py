"""`python -m kubeflow_trainer_policy.lint [ROOT]`: `opa fmt` layout, strict mode, data references and METADATA of
every emitted Rego module (policies/, the ConstraintTemplates, each OPA bundle's decision.rego)."""

from __future__ import annotations

import sys
from pathlib import Path

from kubeflow_trainer_policy.lint.check_all import lint
from kubeflow_trainer_policy.paths import PROJECT_ROOT

__all__ = ["lint", "main"]


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else PROJECT_ROOT
    count, problems = lint(root)
    for problem in problems:
        print(problem)
    print(f"rego lint: {count} modules, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
