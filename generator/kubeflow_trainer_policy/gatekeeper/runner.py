"""Evaluates one admission request the way Gatekeeper does: every template compiled alone (as Gatekeeper compiles
each), all of them evaluated together in one engine."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine, PolicyEngine, PrintLine
from kubeflow_trainer_policy.engine.fact_cache import FactCache, cache_dir
from kubeflow_trainer_policy.engine.lenient import BuiltinFailure, LenientBuiltins
from kubeflow_trainer_policy.errors import EngineError, TemplateError
from kubeflow_trainer_policy.gatekeeper import cel_engine
from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
from kubeflow_trainer_policy.gatekeeper.external_data import ExternalData, ProviderClient, ResponseCache
from kubeflow_trainer_policy.gatekeeper.inventory import namespace_object
from kubeflow_trainer_policy.gatekeeper.match import MatchError, request_matches
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest
from kubeflow_trainer_policy.gatekeeper.template import ConstraintTemplate
from kubeflow_trainer_policy_provider.documents import dig


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
    builtin_failures: list[str] = field(default_factory=list)
    """Builtins that failed and were undefined, as in Gatekeeper (which says nothing about them)."""
    matched: list[str] = field(default_factory=list)
    """The constraints whose match selected the request."""

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

    QUERY_TEMPLATE = (
        "violations := data.{path} with input as input.gatekeeper with data.inventory as input.inventory{lenient}"
    )

    def __init__(
        self, template: ConstraintTemplate, external_data: ExternalData | None, engine: PolicyEngine | None = None
    ):
        self.template = template
        self.engine = engine or EmbeddedOpaEngine()
        if external_data is not None:
            self.engine.register_builtin("external_data", external_data, arity=1)
        self._lenient = LenientBuiltins(self.engine, EmbeddedOpaEngine)
        try:
            for module in template.modules:
                self.engine.add_module(module.path, module.source)
            self.engine.eval_query("x := 1")
        except EngineError as exc:
            raise TemplateError(template.name, f"Rego does not compile: {_one_line(exc)}") from exc

    def violations(
        self, review: dict[str, Any], parameters: dict[str, Any], inventory: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], list[PrintLine]]:
        payload = {"gatekeeper": {"review": review, "parameters": parameters}, "inventory": inventory}
        path = self.template.violation_path
        try:
            result = self._lenient.evaluate(
                lambda lenient: self.QUERY_TEMPLATE.format(path=path, lenient=lenient), payload
            )
        except EngineError as exc:
            raise TemplateError(self.template.name, f"evaluation failed: {_one_line(exc)}") from exc
        found = result.bindings[0]["violations"] if result.bindings else []
        for item in found:
            if not is_violation(item):
                raise TemplateError(self.template.name, f"violation without a string `msg`: {item!r}")
        return found, result.prints

    def builtin_failures(self) -> list[BuiltinFailure]:
        return self._lenient.take_failures()

    def close(self) -> None:
        self._lenient.close()
        self.engine.close()


_COMPILED = {"compiles_alone": True}


def _compile_alone_key(template: ConstraintTemplate, external_data: bool) -> str:
    """Fact cache key of "these modules compile in an engine of their own" (see CompiledTemplate)."""
    parts = ["compiles-alone", f"external_data={external_data}"]
    parts += [f"{module.path}\0{module.source}" for module in template.modules]
    return "\0\0".join(parts)


def is_violation(item: Any) -> bool:
    """Gatekeeper requires every violation to be an object with a string `msg`."""
    return isinstance(item, dict) and isinstance(item.get("msg"), str)


def _object_namespace(request: AdmissionRequest) -> str:
    """Gatekeeper finds the Namespace for namespaceSelector from the object itself."""
    for obj in (request.object, request.old_object):
        namespace = dig(obj, "metadata", "namespace")
        if isinstance(namespace, str) and namespace:
            return namespace
    return ""


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def review_text(review: dict[str, Any]) -> str | None:
    """The review as JSON text for json.unmarshal in the query, or None where the engine's own input conversion
    must see it (a value JSON cannot carry: NaN, infinity, a lone surrogate), so its error stays the same.

    A review handed to the engine as a value is serialised to JSON, decoded, re-encoded and decoded again by the
    bridge and OPA before it becomes an OPA value; as a string it is decoded once (docs/performance.md)."""
    try:
        # No circularity check: a review is a tree (a cycle ends in RecursionError), and the check costs a quarter
        # of the encoding of a 3 MiB review.
        text = json.dumps(review, ensure_ascii=False, allow_nan=False, check_circular=False)
        text.encode("utf-8")
    except (ValueError, TypeError, RecursionError):  # UnicodeEncodeError is a ValueError
        return None
    return text


DECODED_REVIEW = "trainer_policy_runner.review"
REVIEW_TEXT = "trainer_policy_runner.review_text"
"""The host function that hands the engine the text of review `n` (the review numbered in input.review)."""
DECODER = (
    "package trainer_policy_runner\n\n"
    "# The review, handed over as JSON text, decoded once per query: every template's `with input` reads this rule.\n"
    f"review := json.unmarshal({REVIEW_TEXT}(input.review))\n"
)
"""The module that decodes a review sent as text (review_text); a complete rule, so it is evaluated once per query.
Not a variable of a comprehension in the query (which would keep it out of the bindings sent back): there, a
`with input as` value that reads input recursed until Go's stack limit aborted the process (OPA 1.20.2 in the
bridge), while a flat query evaluates each `with` value before replacing input.

The text comes through a host function, not in the input: the bridge decodes an input with Go's encoding/json
before OPA sees it, which for a 3 MiB review costs more than the host function's one string (docs/performance.md)."""


class CombinedTemplates:
    """Every template in ONE engine, as Gatekeeper keeps them in one OPA: a review is converted into
    OPA values once and all matched constraints are evaluated by one query. Libs shipped identically
    by several templates are loaded once.

    Raises EngineError when the templates cannot share an engine (same package in two templates); modules
    that do not compile together (conflicting libs) surface at the first review, which the runner then
    evaluates template by template (see `compiles`). Nothing is compiled up front: preparing a query compiles
    every module, so a warm-up query doubled the compile work of a one-review process.

    data.inventory lives in the engine's store, as Gatekeeper's sync keeps it in OPA's store: a review then
    converts into OPA values only the inventory objects its rules read, not the whole inventory (which grows with
    every synced object: docs/performance.md). The store can only be merged into (the engine has no delete),
    so only the first inventory is stored; a different one, later, comes with each review and hides the stored
    one (`with data.inventory as input.inventory`).
    """

    def __init__(self, templates: Iterable[ConstraintTemplate], external_data: ExternalData | None):
        self.engine = EmbeddedOpaEngine()
        # The review's own json.unmarshal failing is not a policy's builtin failing: never made lenient.
        self.lenient = LenientBuiltins(self.engine, EmbeddedOpaEngine, strict=frozenset({"json.unmarshal"}))
        self._queries: dict[tuple[tuple[str, ...], bool, str, bool], str] = {}
        self._paths: dict[str, str] = {}
        self._stored_inventory: str | None = None
        self._inventory: dict[str, Any] = {}
        self._inventory_in_store = False
        self._text: tuple[int, str] = (0, "")
        try:
            if external_data is not None:
                self.engine.register_builtin("external_data", external_data, arity=1)
            self.engine.register_builtin(REVIEW_TEXT, self._review_text, arity=1)
            self.engine.add_module("trainer_policy_runner.rego", DECODER)
            loaded: set[str] = set()
            packages: set[str] = {"trainer_policy_runner"}
            for template in templates:
                if template.package in packages:
                    raise EngineError(f"package {template.package} is used by two templates")
                packages.add(template.package)
                self._paths[template.kind] = template.violation_path
                for module in template.modules:
                    if module.source not in loaded:
                        loaded.add(module.source)
                        self.engine.add_module(module.path, module.source)
        except EngineError:
            self.engine.close()
            raise

    def compiles(self) -> bool:
        """Whether the modules compile together (asked after a query failed: compile or evaluation error)."""
        try:
            self.engine.eval_query("x := 1")
        except EngineError:
            return False
        return True

    def use_inventory(self, inventory: dict[str, Any]) -> None:
        """data.inventory for the reviews that follow (see the class docs: the first one is stored)."""
        # As JSON, because Python's == says True == 1 == 1.0, which OPA does not.
        text = json.dumps(inventory, sort_keys=True)
        if self._stored_inventory is None:
            self.engine.add_data(inventory, "inventory")
            self._stored_inventory = text
        self._inventory = inventory
        self._inventory_in_store = text == self._stored_inventory

    def _query(self, kinds: tuple[str, ...], lenient: str, as_text: bool) -> str:
        key = (kinds, self._inventory_in_store, lenient, as_text)
        query = self._queries.get(key)
        if query is None:
            inventory = "" if self._inventory_in_store else " with data.inventory as input.inventory"
            review = f"data.{DECODED_REVIEW}" if as_text else "input.review"
            query = "; ".join(
                f"v{i} := data.{self._paths[kind]} with input as "
                f'{{"review": {review}, "parameters": input.parameters[{i}]}}{inventory}{lenient}'
                for i, kind in enumerate(kinds)
            )
            self._queries[key] = query
        return query

    def _review_text(self, number: Any) -> str:
        current, text = self._text
        if number != current or not text:  # a review's text is never empty: "" is one already evaluated
            raise EngineError(f"review {number} is not being evaluated")
        return text

    def violations(
        self, review: dict[str, Any], batch: list[Constraint]
    ) -> tuple[list[list[dict[str, Any]]], list[PrintLine]]:
        text = review_text(review)
        if text is not None:
            self._text = (self._text[0] + 1, text)
        payload: dict[str, Any] = {
            "review": review if text is None else self._text[0],
            "parameters": [c.parameters for c in batch],
        }
        if not self._inventory_in_store:
            payload["inventory"] = self._inventory
        kinds = tuple(c.kind for c in batch)
        try:
            result = self.lenient.evaluate(lambda clause: self._query(kinds, clause, text is not None), payload)
        finally:
            self._text = (self._text[0], "")  # the text is not kept past its review
        bindings = result.bindings[0] if result.bindings else {}
        return [bindings.get(f"v{i}", []) for i in range(len(batch))], result.prints

    def close(self) -> None:
        self.lenient.close()
        self.engine.close()


class GatekeeperRunner:
    """Templates compiled once; each review matched against every Constraint and evaluated by the engine
    `engine` picks for its template (cel_engine.ENGINES: Rego unless asked otherwise)."""

    def __init__(
        self,
        policy_set: PolicySet,
        providers: dict[str, ProviderClient] | None = None,
        cache: ResponseCache | None = None,
        objects: Iterable[dict[str, Any]] = (),
        *,
        external_data: bool = True,
        engine: str = cel_engine.REGO,
    ):
        """`external_data=False` loads the templates as gator does: without the external_data builtin, so a
        template that calls it does not compile (Gatekeeper's webhook and audit register it). The Rego of every
        template is compiled whatever the engine, as before."""
        if engine not in cel_engine.ENGINES:
            raise ValueError(f"engine must be one of {', '.join(cel_engine.ENGINES)}, not {engine!r}")
        self.policy_set = policy_set
        self.engine = engine
        self.cel = cel_engine.CelTemplates()
        self.external_data = ExternalData(providers or {}, cache if cache is not None else ResponseCache())
        builtin = self.external_data if external_data else None
        self._builtin = builtin
        self.compiled: dict[str, CompiledTemplate] = {}
        self.combined: CombinedTemplates | None = None
        facts = FactCache(cache_dir())
        try:
            for kind, template in policy_set.templates.items():
                # Gatekeeper compiles each template alone; a module set known to have compiled alone (with the
                # same builtins and engine) gets its own engine only when a review needs it.
                key = _compile_alone_key(template, external_data)
                if facts.get(key) != _COMPILED:
                    self.compiled[kind] = CompiledTemplate(template, builtin)
                    facts.put(key, _COMPILED)
        except TemplateError:
            self.close()
            raise
        try:
            self.combined = CombinedTemplates(policy_set.templates.values(), builtin)
        except EngineError:
            self.combined = None
        self.set_objects(objects)

    def set_objects(self, objects: Iterable[dict[str, Any]]) -> None:
        """The cluster as Gatekeeper's sync sees it: inventory and Namespace objects."""
        self.objects = list(objects)
        self.inventory = inventory_document(self.objects)
        if self.combined is not None:
            self.combined.use_inventory(self.inventory)

    def review(self, request: AdmissionRequest) -> ReviewResult:
        result = ReviewResult()
        namespace = request.namespace or _object_namespace(request)
        ns = namespace_object(self.objects, namespace) if namespace else None
        review = request.as_input()
        matched: list[Constraint] = []
        for constraint in self.policy_set.constraints:
            try:
                if request_matches(constraint.match, review, ns):
                    matched.append(constraint)
            except MatchError as exc:
                result.errors.append(f"constraint {constraint.name}: match failed: {exc}")
        result.matched = [c.name for c in matched]
        templates = self.policy_set.templates
        judged = [c for c in matched if cel_engine.evaluated(self.engine, templates[c.kind])]
        by_cel = [c for c in judged if cel_engine.by_cel(self.engine, templates[c.kind])]
        by_rego = [c for c in judged if not cel_engine.by_cel(self.engine, templates[c.kind])]
        self._builtin_failures()  # none is left over from an earlier review
        if by_rego and not self._evaluate_combined(by_rego, review, result):
            self._builtin_failures()  # the one-by-one evaluation below finds them again, attributed
            for constraint in by_rego:
                self._evaluate(constraint, review, result)
        if by_cel:
            self._evaluate_cel(by_cel, review, result)
        result.builtin_failures = sorted({str(f) for f in self._builtin_failures()})
        result.violations.sort(key=lambda v: (v.constraint_kind, v.constraint, v.msg))
        return result

    def _builtin_failures(self) -> list[BuiltinFailure]:
        failures = self.combined.lenient.take_failures() if self.combined is not None else []
        for compiled in self.compiled.values():
            failures += compiled.builtin_failures()
        return failures

    def _evaluate_combined(self, matched: list[Constraint], review: dict[str, Any], result: ReviewResult) -> bool:
        """One query for every matched constraint; False when it failed, so each is evaluated alone to
        attribute the error to its template."""
        if self.combined is None:
            return False
        try:
            found, prints = self.combined.violations(review, matched)
        except EngineError:
            if not self.combined.compiles():  # never will: stop trying the shared engine
                self.combined.close()
                self.combined = None
            return False
        checked = []
        for constraint, items in zip(matched, found, strict=True):
            if not all(is_violation(item) for item in items):
                return False
            checked.append((constraint, items))
        result.prints.extend(prints)
        for constraint, items in checked:
            self._add_violations(constraint, items, result)
        return True

    def _compiled(self, kind: str) -> CompiledTemplate:
        compiled = self.compiled.get(kind)
        if compiled is None:
            compiled = self.compiled[kind] = CompiledTemplate(self.policy_set.templates[kind], self._builtin)
        return compiled

    def _evaluate(self, constraint: Constraint, review: dict[str, Any], result: ReviewResult) -> None:
        try:
            compiled = self._compiled(constraint.kind)
        except TemplateError as exc:
            result.errors.append(str(exc))
            return
        try:
            found, prints = compiled.violations(review, constraint.parameters, self.inventory)
        except TemplateError as exc:
            result.errors.append(str(exc))
            return
        result.prints.extend(prints)
        self._add_violations(constraint, found, result)

    def _evaluate_cel(self, constraints: list[Constraint], review: dict[str, Any], result: ReviewResult) -> None:
        """The K8sNativeValidation engine of each constraint's template, in one tools/cel call. A CEL validation
        yields a message only, so the details are empty."""
        templates = self.policy_set.templates
        outcomes = self.cel.evaluate(review, [(c, templates[c.kind]) for c in constraints])
        for constraint, outcome in zip(constraints, outcomes, strict=True):
            if outcome.error:
                name = templates[constraint.kind].name
                result.errors.append(str(TemplateError(name, f"CEL evaluation failed: {outcome.error}")))
                continue
            self._add_violations(constraint, [{"msg": m, "details": {}} for m in outcome.messages], result)

    def _add_violations(self, constraint: Constraint, found: list[dict[str, Any]], result: ReviewResult) -> None:
        template = self.policy_set.templates[constraint.kind]
        for item in found:
            result.violations.append(
                Violation(
                    constraint=constraint.name,
                    constraint_kind=constraint.kind,
                    template=template.name,
                    enforcement_action=constraint.enforcement_action,
                    msg=item["msg"],
                    details=item.get("details", {}),
                )
            )

    def close(self) -> None:
        self.cel.close()
        for compiled in self.compiled.values():
            compiled.close()
        self.compiled = {}
        if self.combined is not None:
            self.combined.close()
            self.combined = None

    def __enter__(self) -> GatekeeperRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
