"""`opa test` on the embedded engine: every `test_*` rule of every `*_test.rego` under a folder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import EngineError
from kubeflow_trainer_policy.testing.outcome import Coverage, TestOutcome

NO_PROVIDER = (
    "external_data is not available in Rego unit tests: replace the function that calls it "
    "(`with data.lib.trainer.jobset_provider.fetch as <value>`), as OPA's own `opa test` needs"
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


def rego_files(root: Path, base: Path | None = None) -> list[RegoFile]:
    """Every module under root, named relative to base (default: root)."""
    return [
        RegoFile(str(p.relative_to(base or root)), p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.rego"))
    ]


def case_test_files(profile_name: str) -> list[RegoFile]:
    """Every rule's cases as Rego tests for one profile, rendered in memory (named as `make build` writes them)."""
    from kubeflow_trainer_policy.catalog import load_catalog
    from kubeflow_trainer_policy.profiles import get_profile
    from kubeflow_trainer_policy.render.rego_tests import case_tests_path, render_rule_tests

    profile = get_profile(profile_name)
    return [
        RegoFile(f"build/case-tests/{profile.name}/{case_tests_path(rule)}", render_rule_tests(rule, profile))
        for rule in load_catalog()
    ]


def run_rego_tests(
    root: Path | Sequence[Path],
    coverage: Coverage | None = None,
    base: Path | None = None,
    extra: Sequence[RegoFile] = (),
) -> list[TestOutcome]:
    """Loads every module under `root` (or under each of several roots) and the `extra` modules into one engine,
    like `opa test root...`, and runs its tests. Files are named relative to base, default the single root."""
    roots = [root] if isinstance(root, Path) else list(root)
    files = [*(file for r in roots for file in rego_files(r, base)), *extra]
    if not files:
        return []
    root = base or roots[0]
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
        except EngineError as exc:
            return [_does_not_compile(root, exc)]
        policy_files = {f.path for f in files if not f.is_test}
        by_package: dict[str, list[str]] = {}
        for package, rule in tests:
            by_package.setdefault(package, []).append(rule)
        # No warm-up query: the batch's own preparation compiles the modules (each preparation compiles all).
        outcomes = _run_batch(engine, by_package, coverage, policy_files) if by_package else None
        if outcomes is not None:
            return outcomes
        try:
            engine.eval_query("x := 1")
        except EngineError as exc:
            return [_does_not_compile(root, exc)]
        # The batch erred: each package in a batch of its own, each test of a package that errs alone.
        outcomes = []
        for package, rules in by_package.items():
            found = _run_batch(engine, {package: rules}, coverage, policy_files)
            outcomes += (
                found if found is not None else [_run_one(engine, package, r, coverage, policy_files) for r in rules]
            )
        return outcomes


def _does_not_compile(root: Path, exc: EngineError) -> TestOutcome:
    return TestOutcome(str(root), False, f"does not compile: {' '.join(str(exc).split())}")


def _package_results(package: str, rules: list[str]) -> str:
    """An object of the package's tests by name, each as the list of its values: [] when the test is undefined.
    Each test is a static ref: a dynamic `data.<package>[name]` makes the type checker unify every rule of the
    package, and a package whose rules have different types fails to compile as one query."""
    entries = ", ".join(f"{json.dumps(rule)}: [value | value := data.{package}.{rule}]" for rule in rules)
    return f"{{{entries}}}"


def _run_batch(
    engine: EmbeddedOpaEngine, by_package: dict[str, list[str]], coverage: Coverage | None, policy_files: set[str]
) -> list[TestOutcome] | None:
    """The tests of these packages in ONE query: preparing a query compiles every loaded module (about half a
    second for a profile's tree), so one query per package made the run O(packages x policy size). None when
    the query errors."""
    query = "; ".join(f"r{i} := {_package_results(p, rules)}" for i, (p, rules) in enumerate(by_package.items()))
    try:
        result = engine.eval_query(query, coverage=coverage is not None)
    except EngineError:
        return None
    if coverage is not None:
        coverage.add(result.coverage, include=policy_files)
    bindings = result.bindings[0] if result.bindings else {}
    return [
        _outcome(engine, package, rule, bindings.get(f"r{i}", {}), coverage, policy_files)
        for i, (package, rules) in enumerate(by_package.items())
        for rule in rules
    ]


def _outcome(
    engine: EmbeddedOpaEngine,
    package: str,
    rule: str,
    values: dict[str, Any],
    coverage: Coverage | None,
    policy_files: set[str],
) -> TestOutcome:
    """Passed when the batch saw the test true; otherwise the test is re-run alone for its own detail."""
    found = values.get(rule)
    if isinstance(found, list) and len(found) == 1 and found[0] is True:
        return TestOutcome(f"data.{package}.{rule}", True)
    return _run_one(engine, package, rule, coverage, policy_files)


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
