"""`opa test` on the embedded engine: every `test_*` rule of every `*_test.rego` under a folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.engine import EmbeddedOpaEngine
from generator.engine.rego_ast import RegoParser
from generator.errors import EngineError
from generator.testing.outcome import Coverage, TestOutcome

NO_PROVIDER = (
    "external_data is not available in Rego unit tests: mock it with `with external_data as <function or value>`"
)


def _unmocked_external_data(_request: Any) -> dict[str, Any]:
    return {"responses": None, "errors": None, "status_code": 500, "system_error": NO_PROVIDER}


@dataclass(frozen=True)
class RegoFile:
    path: str
    """Relative to the root, as the coverage report names it."""
    source: str

    @property
    def is_test(self) -> bool:
        return self.path.endswith("_test.rego")


def rego_files(root: Path) -> list[RegoFile]:
    return [
        RegoFile(str(p.relative_to(root)), p.read_text(encoding="utf-8"))
        for p in sorted(root.rglob("*.rego"))
    ]


def run_rego_tests(root: Path, coverage: Coverage | None = None) -> list[TestOutcome]:
    """Loads every module under `root` into one engine (like `opa test root`) and runs its tests."""
    files = rego_files(root)
    if not files:
        return []
    parser = RegoParser()
    tests: list[tuple[str, str]] = []
    for file in files:
        if not file.is_test:
            continue
        try:
            facts = parser.parse(file.path, file.source)
        except EngineError as exc:
            return [TestOutcome(f"{root}/{file.path}", False, f"does not parse: {' '.join(str(exc).split())}")]
        tests += [(facts.package, rule) for rule in sorted(facts.rule_names) if rule.startswith("test_")]
    with EmbeddedOpaEngine() as engine:
        engine.register_builtin("external_data", _unmocked_external_data, arity=1)
        try:
            for file in files:
                engine.add_module(file.path, file.source)
            engine.eval_query("x := 1")
        except EngineError as exc:
            return [TestOutcome(str(root), False, f"does not compile: {' '.join(str(exc).split())}")]
        policy_files = {f.path for f in files if not f.is_test}
        return [_run_one(engine, package, rule, coverage, policy_files) for package, rule in tests]


def _run_one(
    engine: EmbeddedOpaEngine, package: str, rule: str, coverage: Coverage | None, policy_files: set[str]
) -> TestOutcome:
    name = f"data.{package}.{rule}"
    try:
        result = engine.eval_document(f"{package}.{rule}", coverage=coverage is not None)
    except EngineError as exc:
        return TestOutcome(name, False, f"error: {' '.join(str(exc).split())}")
    if coverage is not None:
        coverage.add(result.coverage, include=policy_files)
    if result.defined and result.value is True:
        return TestOutcome(name, True)
    prints = "; ".join(p.message for p in result.prints)
    detail = "undefined" if not result.defined else f"value {result.value!r}"
    return TestOutcome(name, False, detail + (f" (prints: {prints})" if prints else ""))
