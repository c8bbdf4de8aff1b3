"""bundles/vap/<profile>/: each CEL rule as a plain ValidatingAdmissionPolicy and its Binding, for clusters without
Gatekeeper (`kubectl apply -k bundles/vap/<profile>`).

The policy carries the same CEL as the rule's template (kubeflow_trainer_policy.cel.source.render), with the two
variables Gatekeeper would supply declared in the policy itself: `params`, the parameters of the rule's default
Constraint (a site changes them with a kustomize patch of that variable), and `settings`, the profile's data. The
API server runs every validation of a policy and denies with the first denied one; Warn and Audit bindings report
instead, as the Constraint's enforcementAction says.
"""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.admission import guess_resource
from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.cel.source import CelSource, cel_literal, load_source, render
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy.render.header import header
from kubeflow_trainer_policy.render.yaml_text import dump

API_VERSION = "admissionregistration.k8s.io/v1"
NAME_PREFIX = "trainer-policy-"
PARAMS = "params"
VALIDATION_ACTIONS = {"deny": ["Deny"], "warn": ["Warn"], "dryrun": ["Audit"]}
"""A Constraint's enforcementAction as a binding's validationActions."""
PROFILE_ANNOTATION = "trainer.kubeflow.org/policy-profile"
VERSION_ANNOTATION = "trainer.kubeflow.org/policy-version"
KUBERNETES_ANNOTATION = "trainer.kubeflow.org/minimum-kubernetes"


def policy_name(rule: Rule) -> str:
    return NAME_PREFIX + rule.id


def minimum_kubernetes(source: CelSource) -> str:
    """The oldest API server that accepts the policy: version N compiles a new policy's CEL in the environment of
    its minimum compatibility version, N-1 (tests/cel/test_limits.py measures the compatibility version)."""
    major, minor = source.compatibility.split(".")
    return f"{major}.{int(minor) + 1}"


def policy(source: CelSource, rule: Rule, profile: Profile) -> dict[str, Any]:
    body = render(source, rule, profile)
    params = rule.default_parameters() if rule.parameters else None
    variables = [{"name": PARAMS, "expression": cel_literal(params)}, *body["variables"]]
    operations = sorted(set(rule.operations))
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {
            "name": policy_name(rule),
            "annotations": {
                PROFILE_ANNOTATION: profile.name,
                VERSION_ANNOTATION: rule.version,
                KUBERNETES_ANNOTATION: minimum_kubernetes(source),
                "description": " ".join(rule.title.split()),
            },
        },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": list(m.api_groups),
                        "apiVersions": ["*"],
                        "operations": operations,
                        "resources": [guess_resource(kind) for kind in m.kinds],
                    }
                    for m in rule.match
                ]
            },
            "variables": variables,
            "validations": body["validations"],
        },
    }


def binding(rule: Rule) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name(rule)},
        "spec": {"policyName": policy_name(rule), "validationActions": VALIDATION_ACTIONS[rule.enforcement_action]},
    }


def _kustomization(resources: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}


KUSTOMIZE_NOTE = (
    "# The rules that carry CEL, as plain ValidatingAdmissionPolicies and Bindings: no Gatekeeper needed.\n"
    "# `kubectl apply -k .` on Kubernetes {minimum}+ (each policy's trainer.kubeflow.org/minimum-kubernetes;\n"
    "# a rule's own folder installs it alone). The rules that read cluster state stay Rego-only: docs/cel.md.\n"
)
PARAMS_NOTE = (
    "# `variables.params` are the parameters of the rule's default Constraint; change them with a kustomize patch of\n"
    "# that variable (docs/cel.md).\n"
)


def bundle_files(rules: list[Rule], profile: Profile) -> dict[str, str]:
    """Files of bundles/vap/<profile>/, relative to it."""
    files: dict[str, str] = {}
    folders: list[str] = []
    minimum = []
    for rule in rules:
        source = load_source(rule)
        if source is None:
            continue
        origin = f"policies/{rule.id}/ (profile {profile.name})"
        files[f"{rule.id}/policy.yaml"] = header(origin) + PARAMS_NOTE + dump(policy(source, rule, profile))
        files[f"{rule.id}/binding.yaml"] = header(origin) + dump(binding(rule))
        files[f"{rule.id}/kustomization.yaml"] = header(origin) + dump(_kustomization(["policy.yaml", "binding.yaml"]))
        folders.append(rule.id)
        minimum.append(minimum_kubernetes(source))
    if folders:
        newest = max(minimum, key=lambda v: tuple(int(p) for p in v.split(".")))
        files["kustomization.yaml"] = (
            header(f"policies/ (profile {profile.name})")
            + KUSTOMIZE_NOTE.format(minimum=newest)
            + dump(_kustomization(folders))
        )
    return files
