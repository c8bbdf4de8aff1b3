"""Suites in gator's format (test.gatekeeper.sh/v1alpha1 Suite), run with gator's semantics on this project's runner.

- A case object that is an AdmissionReview is an admission request; a bare object is reviewed as
  Gatekeeper's audit does (operation "", oldObject null).
- A `test.gatekeeper.sh` Suite runs as `gator verify` does: no external_data builtin, so a template
  that calls it does not compile and the test fails, as it would under gator.
- A `trainer-policy.kubeflow.org` Suite (same format, which gator skips) names its `providers`: they
  are answered by the provider's own request handler over each case's inventory, so templates that
  call external_data are verified here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import InputError, TemplateError
from kubeflow_trainer_policy.gatekeeper.constraint import is_constraint, parse_constraint
from kubeflow_trainer_policy.gatekeeper.external_data import InProcessProvider, ResponseCache
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet, add_constraint, load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import gator_request
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.testing.outcome import TestOutcome
from kubeflow_trainer_policy_provider.reader import decode, parse, read_bytes, read_documents, read_single

SUITE_API_VERSION = "test.gatekeeper.sh/v1alpha1"
PROVIDER_SUITE_API_VERSION = "trainer-policy.kubeflow.org/v1alpha1"
SUITE_API_VERSIONS = (SUITE_API_VERSION, PROVIDER_SUITE_API_VERSION)
SUITE_KIND = re.compile(r"^kind:\s*Suite\s*$", re.MULTILINE)


def find_suites(root: Path) -> list[Path]:
    suites = []
    for path in sorted(root.rglob("*.yaml")):
        text = decode(read_bytes(path), str(path))  # over a limit or not text: said, not skipped
        if "Suite" not in text:  # most files are not suites: skip parsing them
            continue
        try:
            docs = list(parse(text, str(path)))
        except InputError:
            if SUITE_KIND.search(text):  # a suite that does not parse is an error, not a file to skip
                raise
            continue
        if any(d.body.get("kind") == "Suite" and d.body.get("apiVersion") in SUITE_API_VERSIONS for d in docs):
            suites.append(path)
    return suites


@dataclass(frozen=True)
class Assertion:
    violations: str | int
    message: re.Pattern[str] | None

    def check(self, messages: list[str]) -> str:
        """'' when it holds, else why not."""
        matching = [m for m in messages if self.message is None or self.message.search(m)]
        about = f" matching {self.message.pattern!r}" if self.message else ""
        if self.violations == "yes" and not matching:
            return f"want at least one violation{about}, got none (all: {messages})"
        if self.violations == "no" and matching:
            return f"want no violation{about}, got {matching}"
        if isinstance(self.violations, int) and len(matching) != self.violations:
            return f"want {self.violations} violations{about}, got {len(matching)}: {matching}"
        return ""


def _assertion(source: str, field: str, raw: Any) -> Assertion:
    if not isinstance(raw, dict):
        raise InputError(source, "must be a mapping", field=field)
    violations = raw.get("violations", "yes")
    if isinstance(violations, bool):  # YAML 1.1 reads bare yes/no as booleans
        violations = "yes" if violations else "no"
    if isinstance(violations, str) and violations.isdigit():
        violations = int(violations)
    if violations not in ("yes", "no") and not (isinstance(violations, int) and violations >= 0):
        raise InputError(source, "must be yes, no or a non-negative integer", field=f"{field}.violations")
    message = raw.get("message")
    try:
        pattern = re.compile(message) if isinstance(message, str) else None
    except re.error as exc:
        raise InputError(source, f"invalid regular expression: {exc}", field=f"{field}.message") from exc
    return Assertion(violations, pattern)


def run_suite(path: Path) -> list[TestOutcome]:
    doc = read_single(path)
    tests = doc.body.get("tests")
    if not isinstance(tests, list):
        raise InputError(doc.source, "must be a list", field="tests")
    providers: list[str] = []
    if doc.body.get("apiVersion") == PROVIDER_SUITE_API_VERSION:
        providers = doc.body.get("providers") or []
        if not isinstance(providers, list) or not all(isinstance(p, str) and p for p in providers):
            raise InputError(doc.source, "must be a list of Provider names", field="providers")
    outcomes: list[TestOutcome] = []
    parser = RegoParser()
    for i, test in enumerate(tests):
        if not isinstance(test, dict):
            raise InputError(doc.source, "must be a mapping", field=f"tests[{i}]")
        if test.get("skip"):
            continue
        outcomes += _run_test(path, i, test, providers, parser)
    return outcomes


def _run_test(
    path: Path, index: int, test: dict[str, Any], providers: list[str], parser: RegoParser
) -> list[TestOutcome]:
    base = path.parent
    field = f"tests[{index}]"
    name = f"{path}:{test.get('name', index)}"
    for key in ("template", "constraint"):
        if not isinstance(test.get(key), str):
            raise InputError(str(path), "required: a file path", field=f"{field}.{key}")
    loaded = load_policy_set([base / test["template"]], parser)
    policy_set = PolicySet(loaded.templates, [], {})
    constraints = [d for d in read_documents(base / test["constraint"]) if is_constraint(d.body)]
    if not constraints:
        raise InputError(str(path), f"{test['constraint']} holds no Constraint", field=f"{field}.constraint")
    for constraint_doc in constraints:
        add_constraint(policy_set, parse_constraint(constraint_doc))
    try:
        runner = GatekeeperRunner(policy_set, external_data=bool(providers))
    except TemplateError as exc:
        return [TestOutcome(name, False, str(exc))]
    outcomes = []
    with runner:
        for j, case in enumerate(test.get("cases") or []):
            case_field = f"{field}.cases[{j}]"
            if not isinstance(case, dict):
                raise InputError(str(path), "must be a mapping", field=case_field)
            if case.get("skip"):
                continue
            outcomes.append(_run_case(path, case_field, f"{name}/{case.get('name', j)}", case, runner, providers))
    return outcomes


def _run_case(
    path: Path, field: str, name: str, case: dict[str, Any], runner: GatekeeperRunner, providers: list[str]
) -> TestOutcome:
    base = path.parent
    if not isinstance(case.get("object"), str):
        raise InputError(str(path), "required: a file path", field=f"{field}.object")
    request = gator_request(read_single(base / case["object"]))
    objects = [d.body for f in case.get("inventory") or [] for d in read_documents(base / f)]
    provider = InProcessProvider.serving(objects)
    runner.external_data.providers = dict.fromkeys(providers, provider)
    runner.external_data.cache = ResponseCache()
    runner.set_objects(objects)
    result = runner.review(request)
    if result.errors:
        return TestOutcome(name, False, "; ".join(result.errors))
    messages = [v.msg for v in result.violations]
    assertions = case.get("assertions") or []
    if not isinstance(assertions, list) or not assertions:
        raise InputError(str(path), "required: a non-empty list", field=f"{field}.assertions")
    for k, raw in enumerate(assertions):
        failure = _assertion(str(path), f"{field}.assertions[{k}]", raw).check(messages)
        if failure:
            return TestOutcome(name, False, failure)
    return TestOutcome(name, True)
