"""`python -m kubeflow_trainer_policy.pinned.checks [ROOT]` (make build): the other real tools on what ships, each
command as the README gives it, run from the project root:

- with every pinned gator: `gator verify bundles/gatekeeper/<profile>/...`, every profile;
- Regal: `regal test .regal/rules` (the project's own rules, docs/lint.md) and `regal lint policies/ profiles/`
  (Regal's rules and the project's, configured by .regal/config.yaml).

Each command is printed with its result; the last line counts the problems (exit 1 when there are any)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kubeflow_trainer_policy import pinned
from kubeflow_trainer_policy.paths import PROJECT_ROOT


@dataclass(frozen=True)
class Check:
    tool: pinned.Installed
    args: tuple[str, ...]

    @property
    def shown(self) -> str:
        return f"{self.tool.path.name} {' '.join(self.args)}  [{self.tool.label}]"


def profiles(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "bundles" / "gatekeeper").iterdir() if p.is_dir())


def gator_checks(root: Path, gators: list[pinned.Installed]) -> list[Check]:
    return [Check(g, ("verify", f"bundles/gatekeeper/{profile}/...")) for g in gators for profile in profiles(root)]


def regal_checks(regal: pinned.Installed) -> list[Check]:
    return [Check(regal, ("test", ".regal/rules")), Check(regal, ("lint", "policies/", "profiles/"))]


def run(check: Check, root: Path) -> str | None:
    """None when the command passes, else its exit status and output."""
    result = subprocess.run(
        [str(check.tool.path), *check.args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if result.returncode == 0:
        return None
    return f"exit {result.returncode}: {(result.stdout + result.stderr).strip()}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else PROJECT_ROOT
    try:
        checks = gator_checks(root, pinned.gators()) + regal_checks(pinned.regal())
    except pinned.InstallError as exc:
        print(f"tool checks: {exc}", file=sys.stderr)
        return 2
    problems = []
    for check in checks:
        problem = run(check, root)
        print(f"{'ok  ' if problem is None else 'FAIL'} {check.shown}", flush=True)
        if problem is not None:
            problems.append(f"{check.shown}: {problem}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"tool checks: {len(checks)} commands, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
