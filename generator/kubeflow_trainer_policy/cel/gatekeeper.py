"""A rule's CEL as Gatekeeper's K8sNativeValidation engine runs it: the ConstraintTemplate's code entry, the
Constraint Gatekeeper passes as `params`, and batches of reviews judged by tools/cel (flavour gatekeeper).

Gatekeeper evaluates only one engine per template and prefers K8sNativeValidation to Rego (frameworks
client.driverForTemplate; Gatekeeper's validating-admission-policy docs, "Only one engine is evaluated"), in its
webhook, audit and gator alike: a template that carries CEL is judged by its CEL everywhere, so the CEL must report
what the Rego reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.cel import run
from kubeflow_trainer_policy.cel.source import CelSource, render
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy_provider.documents import read_single

ENGINE = "K8sNativeValidation"
CONSTRAINTS_API_VERSION = "constraints.gatekeeper.sh/v1beta1"
ADMISSION_TARGET = "admission.k8s.gatekeeper.sh"
PER_CALL_LIMIT = 1_000_000
"""k8s.io/apiserver's celconfig.PerCallLimit: the budget Gatekeeper's K8sNativeValidation driver gives one template's
whole evaluation (validations, the variables they read, messages); the API server gives a
ValidatingAdmissionPolicy binding ten times as much (RuntimeCELCostBudget)."""


def code_entry(source: CelSource, rule: Rule, profile: Profile, *, generate_vap: bool = True) -> dict[str, Any]:
    """The `spec.targets[0].code[]` entry of the template (generateVAP: Gatekeeper then also enforces it through a
    ValidatingAdmissionPolicy it generates, where the cluster has them)."""
    body = render(source, rule, profile)
    return {"engine": ENGINE, "source": {**body, "generateVAP": generate_vap}}


def shipped_template(rule: Rule, profile: Profile, bundles: Path | None = None) -> dict[str, Any]:
    """The rule's ConstraintTemplate as the profile's bundle ships it (bundles/gatekeeper/<profile>/<rule>/), which
    must carry a K8sNativeValidation entry: what users install is what is judged."""
    path = (bundles or gatekeeper_bundle_dir(profile.name)) / rule.id / "template.yaml"
    body = read_single(path).body
    code = [c for t in body.get("spec", {}).get("targets", []) for c in t.get("code", [])]
    if not any(c.get("engine") == ENGINE for c in code):
        raise InputError(str(path), f"has no {ENGINE} entry", field="spec.targets[0].code")
    return body


def constraint_document(rule: Rule, parameters: dict[str, Any] | None) -> dict[str, Any]:
    """The Constraint as Gatekeeper passes it to CEL; `spec.parameters` left out when there are none."""
    spec: dict[str, Any] = {}
    if parameters is not None:
        spec["parameters"] = parameters
    return {"apiVersion": CONSTRAINTS_API_VERSION, "kind": rule.kind, "metadata": {"name": rule.id}, "spec": spec}


@dataclass(frozen=True)
class Review:
    """One review for one rule: Gatekeeper's input.review and the Constraint's spec.parameters."""

    rule: Rule
    review: dict[str, Any]
    parameters: dict[str, Any] | None


@dataclass(frozen=True)
class Outcome:
    violations: tuple[str, ...]
    """The messages Gatekeeper reports (one per denied validation, in validation order)."""
    error: str = ""
    """tools/cel could not evaluate the review (e.g. an object without a kind, which Gatekeeper cannot decode)."""
    cost: int = 0
    """The runtime cost the evaluation spent, as the API server counts it (Gatekeeper's budget: PER_CALL_LIMIT)."""


def evaluate(
    reviews: Iterable[Review],
    templates: dict[str, dict[str, Any]],
    session: run.CelSession | None = None,
) -> list[Outcome]:
    """Every review judged by its rule's template (rule id -> ConstraintTemplate document, e.g. shipped_template)
    in one tools/cel call (a new process, or the session's), in order."""
    reviews = list(reviews)
    rules = {r.rule.id: r.rule for r in reviews}
    policies = [{"name": rule_id, "flavour": "gatekeeper", "template": templates[rule_id]} for rule_id in rules]
    cases = [
        {
            "id": str(i),
            "policy": r.rule.id,
            "request": r.review,
            "constraint": constraint_document(r.rule, r.parameters),
        }
        for i, r in enumerate(reviews)
    ]
    results = run.evaluate(policies, cases, session)
    return [
        Outcome(tuple(result.get("violations") or ()), result.get("error", ""), int(result.get("cost", 0)))
        for result in results
    ]
