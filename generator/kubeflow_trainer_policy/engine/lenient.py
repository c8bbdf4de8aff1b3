"""Builtins evaluated as Gatekeeper evaluates them: a builtin that fails is undefined, not an error.

Gatekeeper's Rego driver (frameworks `constraint/pkg/client/drivers/rego/driver.go`) evaluates without
`rego.StrictBuiltinErrors`, so `to_number("1e400")` or `count(5)` just makes its expression undefined and the
evaluation goes on. The embedded engine's bridge always sets StrictBuiltinErrors(true) and cannot be told
otherwise. So a query that fails in a builtin is evaluated again with that builtin replaced
(`with to_number as <replacement>`) by one that calls the real builtin in a helper engine and is undefined where
it fails, repeated for each builtin that fails in turn. Where no builtin fails (nearly always) the result is the
strict one, which then is the lenient one too; where one fails, every call of it returns what the real builtin
returns or is undefined, which is exactly OPA's non-strict evaluation. The failures are recorded: Gatekeeper
swallows them silently, a review can say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.engine.base import PolicyEngine, QueryResult
from kubeflow_trainer_policy.errors import EngineError

BUILTIN_ERROR = re.compile(r"\beval_(?:builtin|type)_error: ([A-Za-z_][A-Za-z0-9_.]*): ")
"""How OPA reports a builtin that failed (an operand of the wrong type, or the builtin's own error)."""
MAX_ARITY = 5
REPLACEMENT_PREFIX = "trainer_policy_lenient"


@dataclass(frozen=True)
class BuiltinFailure:
    builtin: str
    message: str

    def __str__(self) -> str:
        message = self.message if len(self.message) <= 200 else f"{self.message[:200]}..."
        return f"{self.builtin} failed ({message}); Gatekeeper treats it as undefined, and so did this review"


class LenientBuiltins:
    """The replacements registered on one engine, and the `with` clauses that put them in a query."""

    def __init__(
        self, engine: PolicyEngine, helper_factory: Callable[[], PolicyEngine], strict: frozenset[str] = frozenset()
    ):
        """`strict`: builtins never replaced, whose failure stays an error (the caller's own, not the policy's)."""
        self._engine = engine
        self._strict = strict
        self._helper_factory = helper_factory
        self._helper: PolicyEngine | None = None
        self._replaced: dict[str, str] = {}
        self.failures: list[BuiltinFailure] = []

    @property
    def clause(self) -> str:
        """` with b1 as r1 with b2 as r2 ...` for every builtin replaced so far ("" before any failed)."""
        return "".join(f" with {name} as {replacement}" for name, replacement in sorted(self._replaced.items()))

    def evaluate(self, query: Callable[[str], str], payload: Any) -> QueryResult:
        """`query(clause)` evaluated strictly first; on a builtin failure, again with that builtin replaced."""
        clause = ""
        while True:
            try:
                return self._engine.eval_query(query(clause), payload)
            except EngineError as exc:
                name = failed_builtin(exc)
                if name is None or name in self._strict:
                    raise
                if name not in self._replaced and not self._replace(name):
                    raise
                if clause == self.clause:  # already evaluated with every replacement: nothing left to try
                    raise
                clause = self.clause

    def _replace(self, name: str) -> bool:
        arity = self._arity(name)
        if arity is None:
            return False
        replacement = f"{REPLACEMENT_PREFIX}.{name.replace('.', '_')}"
        call = f"x := {name}({', '.join(f'input[{i}]' for i in range(arity))})"
        self._engine.register_builtin(replacement, self._lenient(name, call), arity=arity)
        self._replaced[name] = replacement
        return True

    def _arity(self, name: str) -> int | None:
        """The builtin's number of arguments, asked of the helper engine (None: not a builtin it knows)."""
        helper = self._helper_engine()
        for arity in range(MAX_ARITY + 1):
            try:
                helper.eval_query(f"x := {name}({', '.join(['null'] * arity)})")
            except EngineError as exc:
                if "undefined function" in str(exc):
                    return None
                if "arity mismatch" in str(exc):
                    continue
            return arity  # it compiled (and ran, or failed on its null operands)
        return None

    def _lenient(self, name: str, call: str) -> Callable[..., Any]:
        def replacement(*args: Any) -> Any:
            try:
                bindings = self._helper_engine().eval_query(call, list(args)).bindings
            except EngineError as exc:
                self.failures.append(BuiltinFailure(name, _one_line(exc)))
                return None  # undefined, as in Gatekeeper
            return bindings[0]["x"] if bindings else None

        return replacement

    def _helper_engine(self) -> PolicyEngine:
        if self._helper is None:
            self._helper = self._helper_factory()
        return self._helper

    def take_failures(self) -> list[BuiltinFailure]:
        failures, self.failures = self.failures, []
        return failures

    def close(self) -> None:
        if self._helper is not None:
            self._helper.close()
            self._helper = None


def failed_builtin(exc: Exception) -> str | None:
    found = BUILTIN_ERROR.search(str(exc))
    return found.group(1) if found else None


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
