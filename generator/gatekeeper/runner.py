"""Evaluates one admission request the way Gatekeeper does, with one engine per template."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from generator.engine import EmbeddedOpaEngine, PolicyEngine, PrintLine
from generator.errors import EngineError, TemplateError
from generator.gatekeeper.constraint import Constraint
from generator.gatekeeper.external_data import ExternalData, ProviderClient, ResponseCache
from generator.gatekeeper.inventory import build_inventory, namespace_object
from generator.gatekeeper.match import MatchError, request_matches
from generator.gatekeeper.policy_set import PolicySet
from generator.gatekeeper.review import AdmissionRequest
from generator.gatekeeper.template import ConstraintTemplate


@dataclass(frozen=True)
class Violation:
    constraint: str
    constraint_kind: str
    template: str
    enforcement_action: str
    msg: str
    details: Any

    def as_json(self) -> dict[str, Any]:
        return {
            "constraint": self.constraint,
            "template": self.template,
            "enforcementAction": self.enforcement_action,
            "msg": self.msg,
            "details": self.details,
        }


@dataclass
class ReviewResult:
    violations: list[Violation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Engine or match errors: the request was NOT evaluated completely."""
    prints: list[PrintLine] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.errors and not any(v.enforcement_action == "deny" for v in self.violations)

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "allowed": self.allowed,
            "violations": [v.as_json() for v in self.violations],
        }
        if self.errors:
            body["errors"] = self.errors
        return body


class CompiledTemplate:
    """A template's modules in a fresh engine, compiled up front so errors surface here."""

    QUERY_TEMPLATE = "violations := data.{path} with input as input.gatekeeper with data.inventory as input.inventory"

    def __init__(self, template: ConstraintTemplate, external_data: ExternalData, engine: PolicyEngine | None = None):
        self.template = template
        self.engine = engine or EmbeddedOpaEngine()
        self.engine.register_builtin("external_data", external_data, arity=1)
        self._query = self.QUERY_TEMPLATE.format(path=template.violation_path)
        try:
            for module in template.modules:
                self.engine.add_module(module.path, module.source)
            self.engine.eval_query("x := 1")
        except EngineError as exc:
            raise TemplateError(template.name, f"Rego does not compile: {_one_line(exc)}") from exc

    def violations(self, review: dict[str, Any], parameters: dict[str, Any], inventory: dict[str, Any]) -> tuple[
        list[dict[str, Any]], list[PrintLine]
    ]:
        payload = {"gatekeeper": {"review": review, "parameters": parameters}, "inventory": inventory}
        try:
            result = self.engine.eval_query(self._query, payload)
        except EngineError as exc:
            raise TemplateError(self.template.name, f"evaluation failed: {_one_line(exc)}") from exc
        found = result.bindings[0]["violations"] if result.bindings else []
        for item in found:
            if not isinstance(item, dict) or not isinstance(item.get("msg"), str):
                raise TemplateError(self.template.name, f"violation without a string `msg`: {item!r}")
        return found, result.prints

    def close(self) -> None:
        self.engine.close()


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


class GatekeeperRunner:
    """Templates compiled once; each review matched against every Constraint and evaluated."""

    def __init__(
        self,
        policy_set: PolicySet,
        providers: dict[str, ProviderClient] | None = None,
        cache: ResponseCache | None = None,
        objects: Iterable[dict[str, Any]] = (),
    ):
        self.policy_set = policy_set
        self.external_data = ExternalData(providers or {}, cache if cache is not None else ResponseCache())
        self.compiled: dict[str, CompiledTemplate] = {}
        try:
            for kind, template in policy_set.templates.items():
                self.compiled[kind] = CompiledTemplate(template, self.external_data)
        except TemplateError:
            self.close()
            raise
        self.set_objects(objects)

    def set_objects(self, objects: Iterable[dict[str, Any]]) -> None:
        """The cluster as Gatekeeper's sync sees it: inventory and Namespace objects."""
        self.objects = list(objects)
        self.inventory = build_inventory(self.objects)

    def review(self, request: AdmissionRequest) -> ReviewResult:
        result = ReviewResult()
        ns = namespace_object(self.objects, request.namespace) if request.namespace else None
        review = request.with_namespace_object(ns).as_input()
        for constraint in self.policy_set.constraints:
            try:
                if not request_matches(constraint.match, review, ns):
                    continue
            except MatchError as exc:
                result.errors.append(f"constraint {constraint.name}: match failed: {exc}")
                continue
            self._evaluate(constraint, review, result)
        result.violations.sort(key=lambda v: (v.constraint_kind, v.constraint, v.msg))
        return result

    def _evaluate(self, constraint: Constraint, review: dict[str, Any], result: ReviewResult) -> None:
        compiled = self.compiled[constraint.kind]
        try:
            found, prints = compiled.violations(review, constraint.parameters, self.inventory)
        except TemplateError as exc:
            result.errors.append(str(exc))
            return
        result.prints.extend(prints)
        for item in found:
            result.violations.append(
                Violation(
                    constraint=constraint.name,
                    constraint_kind=constraint.kind,
                    template=compiled.template.name,
                    enforcement_action=constraint.enforcement_action,
                    msg=item["msg"],
                    details=item.get("details", {}),
                )
            )

    def close(self) -> None:
        for compiled in self.compiled.values():
            compiled.close()
        self.compiled = {}

    def __enter__(self) -> GatekeeperRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
