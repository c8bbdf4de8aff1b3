"""Policy engines: one interface, the embedded real OPA behind it (and later an `opa` binary)."""

from kubeflow_trainer_policy.engine.base import EvalResult, PolicyEngine, PrintLine, QueryResult
from kubeflow_trainer_policy.engine.embedded import EmbeddedOpaEngine

__all__ = ["EmbeddedOpaEngine", "EvalResult", "PolicyEngine", "PrintLine", "QueryResult"]
