"""Which engine judges a template, and its K8sNativeValidation engine evaluated the way Gatekeeper's CEL driver
evaluates it: Kubernetes' own admission-policy code (tools/cel, built or found on first use) with the Constraint
as `params`.

Gatekeeper evaluates one engine per template: from 3.18 on it prefers K8sNativeValidation where a template carries
it and runs the Rego otherwise (frameworks' driverForTemplate); older Gatekeepers run only the Rego.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubeflow_trainer_policy.errors import InputError

if TYPE_CHECKING:
    from kubeflow_trainer_policy.cel.run import CelSession
    from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
    from kubeflow_trainer_policy.gatekeeper.template import ConstraintTemplate

REGO, CEL, AUTO = "rego", "cel", "auto"
ENGINES = (REGO, CEL, AUTO)
"""rego: every template by its Rego (Gatekeeper before 3.18); auto: K8sNativeValidation where the template has it,
else Rego (Gatekeeper 3.18+); cel: only the templates that carry K8sNativeValidation, by it (what the standalone
ValidatingAdmissionPolicies enforce); the others are not evaluated."""
CONSTRAINTS_API_VERSION = "constraints.gatekeeper.sh/v1beta1"


def by_cel(engine: str, template: ConstraintTemplate) -> bool:
    """Whether the template is judged by its CEL."""
    return engine != REGO and template.cel is not None


def evaluated(engine: str, template: ConstraintTemplate) -> bool:
    """Whether the template is judged at all: with `cel`, only when it carries CEL."""
    return engine != CEL or template.cel is not None


def constraint_document(constraint: Constraint) -> dict[str, Any]:
    """The Constraint as Gatekeeper hands it to CEL (`params`); `spec.parameters` left out when there are none."""
    spec = {"parameters": constraint.parameters} if constraint.parameters else {}
    return {
        "apiVersion": CONSTRAINTS_API_VERSION,
        "kind": constraint.kind,
        "metadata": {"name": constraint.name},
        "spec": spec,
    }


@dataclass(frozen=True)
class CelOutcome:
    messages: list[str]
    """One per denied validation, in validation order, as Gatekeeper reports them."""
    error: str = ""
    """tools/cel could not evaluate the review (e.g. an object without a kind, which Gatekeeper cannot decode)."""


class CelTemplates:
    """One `cel eval --stream` process for every review of a run, started at the first CEL evaluation; each
    template is compiled in it once (the session sends a policy only when it is new)."""

    def __init__(self) -> None:
        self._session: CelSession | None = None

    def evaluate(self, review: dict[str, Any], judged: list[tuple[Constraint, ConstraintTemplate]]) -> list[CelOutcome]:
        from kubeflow_trainer_policy.cel.run import CelError, evaluate

        policies = [
            {"name": template.name, "flavour": "gatekeeper", "template": template.cel}
            for template in {template.name: template for _, template in judged}.values()
        ]
        cases = [
            {"id": str(i), "policy": template.name, "request": review, "constraint": constraint_document(constraint)}
            for i, (constraint, template) in enumerate(judged)
        ]
        try:
            results = evaluate(policies, cases, self._started())
        except CelError as exc:
            raise InputError("--engine", f"the CEL evaluator failed: {exc}") from exc
        return [CelOutcome(list(r.get("violations") or []), r.get("error", "")) for r in results]

    def _started(self) -> CelSession:
        if self._session is None:
            from kubeflow_trainer_policy.cel.run import CelSession
            from kubeflow_trainer_policy.gotools.builder import ToolchainError

            try:
                self._session = CelSession()
            except ToolchainError as exc:
                raise InputError("--engine", f"CEL needs the tools/cel evaluator: {exc}") from exc
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
