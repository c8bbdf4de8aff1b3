"""Rego source facts read with OPA's own parser (`rego.parse_module`), never with regexes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.engine.embedded import EmbeddedOpaEngine
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


class RegoParser:
    """Parses modules in an engine of its own, so a bad module never poisons a policy engine."""

    def __init__(self) -> None:
        self._engine: EmbeddedOpaEngine | None = None

    def parse_raw(self, file: str, source: str) -> dict[str, Any]:
        """The module's AST as OPA's rego.parse_module gives it (no locations)."""
        if self._engine is None:
            self._engine = EmbeddedOpaEngine()
        try:
            result = self._engine.eval_query(_PARSE, {"file": file, "source": source})
        except EngineError:
            self._engine.close()
            self._engine = None
            raise
        return result.bindings[0]["m"]

    def parse(self, file: str, source: str) -> ModuleFacts:
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
