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
from kubeflow_trainer_policy.cel.source import CelSource, load_source, render
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy_provider.reader import read_single

ENGINE = "K8sNativeValidation"
CONSTRAINTS_API_VERSION = "constraints.gatekeeper.sh/v1beta1"
ADMISSION_TARGET = "admission.k8s.gatekeeper.sh"
PER_CALL_LIMIT = 1_000_000
"""k8s.io/apiserver's celconfig.PerCallLimit: the budget Gatekeeper's K8sNativeValidation driver gives one template's
whole evaluation (validations, the variables they read, messages); the API server gives a
ValidatingAdmissionPolicy binding ten times as much (RuntimeCELCostBudget)."""


GATEKEEPER_CEL_LIBRARY = "1.30"
"""The CEL libraries of the oldest Gatekeeper the bundles support (README: v3.20). Gatekeeper's driver compiles a
template's CEL in the StoredExpressions environment of the k8s.io/apiserver it vendors, and does not report a
compile error until it evaluates: then the validator's failurePolicy (Fail when the source names none) denies
every request the Constraint matches. What the sources prove: Gatekeeper's go.mod pins k8s.io/apiserver v0.30.5 in
the OPA v0.68.0 releases (v3.17.2 to v3.18.3) and v0.33.3 in the OPA v1.5.1 ones (v3.19.2 to v3.20.0); no stored
version ties a k8s.io/apiserver to a v3.20.x or v3.21.x tag. So only CEL that 1.30's libraries compile goes in a
template (docs/cel.md, "Which Gatekeeper runs the CEL")."""

GATEKEEPER_VAP_KUBERNETES = "1.29"
"""The oldest Kubernetes Gatekeeper generates ValidatingAdmissionPolicies on: its docs (validating-admission-policy,
v3.20.x) require 1.30 and allow 1.29 with the ValidatingAdmissionPolicy feature gate and the v1beta1 API. VAP
generation is on by default from 3.20 (--default-create-vap-for-templates=true), so a template asks for it
(generateVAP: true) only when every such API server accepts the policy: an API server N compiles a new policy in
the NewExpressions environment of N-1."""


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def in_template(source: CelSource) -> bool:
    """Whether the rule's template carries its CEL: it compiles with the oldest supported Gatekeeper's libraries.
    A template without it is judged by its Rego on every Gatekeeper; the rule's standalone policy still ships."""
    return _minor(source.compatibility) <= _minor(GATEKEEPER_CEL_LIBRARY)


def generate_vap(source: CelSource) -> bool:
    """Whether Gatekeeper should generate a ValidatingAdmissionPolicy from the template: the CEL's declared oldest
    compatibility version is at most that of the oldest API server Gatekeeper generates policies on."""
    return _minor(source.compatibility) <= _minor(GATEKEEPER_VAP_KUBERNETES) - 1


def code_entry(source: CelSource, rule: Rule, profile: Profile) -> dict[str, Any]:
    """The `spec.targets[0].code[]` entry of the template. generateVAP is always written: left out, Gatekeeper 3.20+
    generates a policy anyway (--default-create-vap-for-templates defaults to true)."""
    body = render(source, rule, profile)
    return {"engine": ENGINE, "source": {**body, "generateVAP": generate_vap(source)}}


def shipped_template(rule: Rule, profile: Profile, bundles: Path | None = None) -> dict[str, Any]:
    """The rule's ConstraintTemplate as the profile's bundle ships it (bundles/gatekeeper/<profile>/<rule>/), which
    carries a K8sNativeValidation entry exactly when in_template says so: what users install is what is judged."""
    path = (bundles or gatekeeper_bundle_dir(profile.name)) / rule.id / "template.yaml"
    body = read_single(path).body
    source = load_source(rule)
    expected = source is not None and in_template(source)
    if has_cel(body) != expected:
        want = "a" if expected else "no"
        raise InputError(str(path), f"must have {want} {ENGINE} entry (regenerate)", field="spec.targets[0].code")
    return body


def has_cel(template: dict[str, Any]) -> bool:
    code = [c for t in template.get("spec", {}).get("targets", []) for c in t.get("code", [])]
    return any(c.get("engine") == ENGINE for c in code)


def judged_template(rule: Rule, profile: Profile, bundles: Path | None = None) -> dict[str, Any]:
    """The template whose CEL the differential and the limits judge: the shipped one, or, for a rule whose CEL the
    oldest supported Gatekeeper cannot compile, the shipped one with the entry a newer Gatekeeper would be given
    (the same CEL its standalone ValidatingAdmissionPolicy carries)."""
    body = shipped_template(rule, profile, bundles)
    source = load_source(rule)
    if source is None or has_cel(body):
        return body
    targets = [{**t, "code": [*t["code"], code_entry(source, rule, profile)]} for t in body["spec"]["targets"]]
    return {**body, "spec": {**body["spec"], "targets": targets}}


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
    *,
    namespace: str = "",
) -> list[Outcome]:
    """Every review judged by its rule's template (rule id -> ConstraintTemplate document, e.g. shipped_template)
    in one tools/cel call (a new process, or the session's), in order. The policies are named `<namespace><rule
    id>`: one session keeps several sets of templates (e.g. one per profile) compiled under distinct namespaces."""
    reviews = list(reviews)
    rules = {r.rule.id: r.rule for r in reviews}
    policies = [
        {"name": namespace + rule_id, "flavour": "gatekeeper", "template": templates[rule_id]} for rule_id in rules
    ]
    cases = [
        {
            "id": str(i),
            "policy": namespace + r.rule.id,
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
