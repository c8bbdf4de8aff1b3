"""The small interface every policy engine implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class PrintLine:
    message: str
    location: str


@dataclass
class EvalResult:
    """What one evaluation produced.

    `value` is the document's value (None when undefined); `coverage` maps a module path to the
    sets of covered and not-covered line numbers when coverage was requested.
    """

    value: Any
    defined: bool
    prints: list[PrintLine] = field(default_factory=list)
    coverage: dict[str, tuple[set[int], set[int]]] | None = None


@dataclass
class QueryResult:
    """Bindings of each solution of a query, plus prints and (optionally) coverage."""

    bindings: list[dict[str, Any]]
    prints: list[PrintLine] = field(default_factory=list)
    coverage: dict[str, tuple[set[int], set[int]]] | None = None


class PolicyEngine(Protocol):
    """A fresh engine holds one policy set: modules cannot be removed, so build a new one per set."""

    def add_module(self, path: str, source: str) -> None: ...

    def add_data(self, value: Any, path: str = "") -> None: ...

    def register_builtin(self, name: str, fn: Callable[..., Any], arity: int) -> None: ...

    def eval_document(self, path: str, input: Any = None, *, coverage: bool = False) -> EvalResult: ...

    def eval_query(self, query: str, input: Any = None, *, coverage: bool = False) -> QueryResult: ...

    def close(self) -> None: ...
