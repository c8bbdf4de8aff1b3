"""Rego source facts read with OPA's own parser (`rego.parse_module`), never with regexes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.engine.embedded import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.fact_cache import FactCache, cache_dir
from kubeflow_trainer_policy.errors import EngineError

_PARSE = "m := rego.parse_module(input.file, input.source)"


@dataclass(frozen=True)
class ModuleFacts:
    package: str
    rule_names: frozenset[str]
    data_refs: frozenset[str]
    """Dotted prefixes `data.<first>.<second>` of every `data` reference, imports included."""
    calls: frozenset[str] = frozenset()
    """Names of every function called, builtins included (`external_data`, `object.get`, `lib.f`...)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "rule_names": sorted(self.rule_names),
            "data_refs": sorted(self.data_refs),
            "calls": sorted(self.calls),
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ModuleFacts | None:
        """None unless `body` is what as_json wrote."""
        lists = [body.get(key) for key in ("rule_names", "data_refs", "calls")]
        if not isinstance(body.get("package"), str):
            return None
        if not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in lists):
            return None
        rule_names, data_refs, calls = (frozenset(v) for v in lists)  # type: ignore[arg-type]
        return cls(package=body["package"], rule_names=rule_names, data_refs=data_refs, calls=calls)


class RegoParser:
    """Parses modules in an engine of its own, so a bad module never poisons a policy engine.

    Facts depend on the source alone, so each distinct source is parsed once: templates ship the same libs
    (a profile's 12 templates hold 48 modules, 21 of them distinct), and parsing is most of a review's start-up.
    A source that fails to parse is not remembered, so its error always names the file it came from. Facts are
    also kept on disk between processes (engine/fact_cache.py), as review runs once per manifest in CI loops."""

    def __init__(self, cache: FactCache | None = None) -> None:
        self._engine: EmbeddedOpaEngine | None = None
        self._facts: dict[str, ModuleFacts] = {}
        self._cache = cache if cache is not None else FactCache(cache_dir())

    def parse(self, file: str, source: str) -> ModuleFacts:
        facts = self._facts.get(source)
        if facts is None:
            stored = self._cache.get(source)
            facts = ModuleFacts.from_json(stored) if stored is not None else None
            if facts is None:
                facts = self._parse(file, source)
                self._cache.put(source, facts.as_json())
            self._facts[source] = facts
        return facts

    def parse_raw(self, file: str, source: str) -> dict[str, Any]:
        """The module's AST as OPA's rego.parse_module gives it (no locations); never cached."""
        if self._engine is None:
            self._engine = EmbeddedOpaEngine()
        try:
            result = self._engine.eval_query(_PARSE, {"file": file, "source": source})
        except EngineError:
            self._engine.close()
            self._engine = None
            raise
        return result.bindings[0]["m"]

    def _parse(self, file: str, source: str) -> ModuleFacts:
        module = self.parse_raw(file, source)
        return ModuleFacts(
            package=".".join(_ref_names(module["package"]["path"])[1:]),
            rule_names=frozenset(_rule_name(rule) for rule in module.get("rules") or []),
            data_refs=frozenset(_data_refs(module)),
            calls=frozenset(_calls(module)),
        )


def _ref_names(ref: list[dict[str, Any]]) -> list[str]:
    return [str(term["value"]) for term in ref if term.get("type") in ("var", "string")]


def _rule_name(rule: dict[str, Any]) -> str:
    head = rule["head"]
    if head.get("name"):
        return head["name"]
    return _ref_names(head.get("ref") or [])[0]


def _data_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("type") == "ref" and isinstance(node.get("value"), list):
            terms = node["value"]
            if terms and terms[0] == {"type": "var", "value": "data"}:
                names = []
                for term in terms[1:3]:
                    if term.get("type") != "string":
                        break
                    names.append(term["value"])
                yield ".".join(["data", *names])
        for value in node.values():
            yield from _data_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _data_refs(item)


def _calls(node: Any) -> Iterator[str]:
    """The operator of every call: a `call` term, or an expression whose terms are [operator, args...]."""
    if isinstance(node, dict):
        operator = None
        if node.get("type") == "call" and isinstance(node.get("value"), list):
            operator = node["value"][0]
        elif isinstance(node.get("terms"), list) and node["terms"]:
            operator = node["terms"][0]
        if isinstance(operator, dict) and operator.get("type") == "ref":
            yield ".".join(_ref_names(operator["value"]))
        for value in node.values():
            yield from _calls(value)
    elif isinstance(node, list):
        for item in node:
            yield from _calls(item)
