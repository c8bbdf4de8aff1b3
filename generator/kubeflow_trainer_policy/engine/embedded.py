"""The real OPA (Go) embedded in-process through opa-golib-python-bindings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeflow_trainer_policy.engine.base import EvalResult, PrintLine, QueryResult
from kubeflow_trainer_policy.errors import EngineError

try:
    from opa_bindings import OpaEngine, OpaError, OpaUndefinedError

    _MISSING: ImportError | None = None
except ImportError as exc:  # every --help, the provider and the wheel's own checks work without it
    _MISSING = exc

    class OpaError(Exception):  # type: ignore[no-redef]
        message = ""

    class OpaUndefinedError(OpaError):  # type: ignore[no-redef]
        pass


class EngineMissingError(EngineError):
    """opa-golib-python-bindings is not installed; raised when an engine is needed, not on import."""


ENGINE_MISSING = (
    "the embedded OPA engine (opa-golib-python-bindings) is not installed: run `trainer-policy install-engine`"
)


def _lines(ranges: list[dict[str, Any]] | None) -> set[int]:
    lines: set[int] = set()
    for r in ranges or []:
        lines.update(range(r["start"]["row"], r["end"]["row"] + 1))
    return lines


class EmbeddedOpaEngine:
    """One OPA instance. Errors from OPA (parse, compile, eval) are raised as EngineError."""

    def __init__(self) -> None:
        if _MISSING is not None:
            raise EngineMissingError(ENGINE_MISSING) from _MISSING
        self._opa = OpaEngine()
        self._prints: list[PrintLine] = []
        self._opa.print_handler = lambda message, location: self._prints.append(PrintLine(message, location))

    def add_module(self, path: str, source: str) -> None:
        try:
            self._opa.add_policy(path, source)
        except OpaError as exc:
            raise EngineError(exc.message) from exc

    def add_data(self, value: Any, path: str = "") -> None:
        try:
            self._opa.add_data(value, path)
        except OpaError as exc:
            raise EngineError(exc.message) from exc

    def register_builtin(self, name: str, fn: Callable[..., Any], arity: int) -> None:
        self._opa.register_function(name, fn, arity=arity)

    def eval_document(self, path: str, input: Any = None, *, coverage: bool = False) -> EvalResult:
        self._prints = []
        try:
            value = self._opa.eval_document(path, input, coverage=coverage)
            defined = True
        except OpaUndefinedError:
            value, defined = None, False
        except OpaError as exc:
            raise EngineError(exc.message) from exc
        return EvalResult(value=value, defined=defined, prints=list(self._prints), coverage=self._coverage(coverage))

    def eval_query(self, query: str, input: Any = None, *, coverage: bool = False) -> QueryResult:
        self._prints = []
        try:
            bindings = self._opa.eval_query(query, input, coverage=coverage)
        except OpaError as exc:
            raise EngineError(exc.message) from exc
        return QueryResult(bindings=bindings, prints=list(self._prints), coverage=self._coverage(coverage))

    def _coverage(self, wanted: bool) -> dict[str, tuple[set[int], set[int]]] | None:
        if not wanted or self._opa.last_coverage is None:
            return None
        return {
            name: (_lines(f.get("covered")), _lines(f.get("not_covered")))
            for name, f in (self._opa.last_coverage.get("files") or {}).items()
        }

    def close(self) -> None:
        self._opa.close()

    def __enter__(self) -> EmbeddedOpaEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
