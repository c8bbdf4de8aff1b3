"""Test outcomes and the coverage they accumulate."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TestOutcome:
    name: str
    passed: bool
    detail: str = ""


@dataclass
class Coverage:
    """Covered / not-covered lines per Rego file, merged over many evaluations."""

    covered: dict[str, set[int]] = field(default_factory=dict)
    not_covered: dict[str, set[int]] = field(default_factory=dict)

    def add(self, report: dict[str, tuple[set[int], set[int]]] | None, include: set[str] | None = None) -> None:
        for name, (covered, not_covered) in (report or {}).items():
            if include is not None and name not in include:
                continue
            self.covered.setdefault(name, set()).update(covered)
            self.not_covered.setdefault(name, set()).update(not_covered)

    def files(self) -> dict[str, tuple[int, int]]:
        """{file: (covered lines, total lines)}"""
        result = {}
        for name in sorted(set(self.covered) | set(self.not_covered)):
            covered = self.covered.get(name, set())
            missing = self.not_covered.get(name, set()) - covered
            result[name] = (len(covered), len(covered) + len(missing))
        return result

    def missing_lines(self, name: str) -> list[int]:
        return sorted(self.not_covered.get(name, set()) - self.covered.get(name, set()))

    @property
    def percent(self) -> float:
        covered = sum(c for c, _ in self.files().values())
        total = sum(t for _, t in self.files().values())
        return 100.0 if total == 0 else 100.0 * covered / total
