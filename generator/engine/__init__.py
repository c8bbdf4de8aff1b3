"""Policy engines: one interface, the embedded real OPA behind it (and later an `opa` binary)."""

from generator.engine.base import EvalResult, PolicyEngine, PrintLine, QueryResult
from generator.engine.embedded import EmbeddedOpaEngine

__all__ = ["EmbeddedOpaEngine", "EvalResult", "PolicyEngine", "PrintLine", "QueryResult"]
