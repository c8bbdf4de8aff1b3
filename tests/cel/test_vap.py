"""The standalone ValidatingAdmissionPolicies (bundles/vap/<profile>/): the shipped YAML files themselves, judged
case by case by the API server's own dispatcher (tools/cel, flavour vap: matchConstraints, the binding's
validationActions, the status a client receives), and rendered by the real kubectl.

The test kube-apiserver is v1.20, which serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (v1
from Kubernetes 1.30; these policies need 1.31): no real API server here can admit or enforce them, so the
decisions come from Kubernetes' admission-policy code in tools/cel, and kubectl's dry run against the 1.20 server
can only show that every object is read and that the missing API is the one refusal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule
from kubeflow_trainer_policy.cel import run
from kubeflow_trainer_policy.cel.source import cel_literal
from kubeflow_trainer_policy.paths import BUNDLES_DIR
from kubeflow_trainer_policy.render import requests
from kubeflow_trainer_policy.render.vap import PARAMS, policy_name
from tests.cel.helpers import cel_rules, profiles, session
from tests.kube.cluster import KubeCluster
from tests.kube.kubectl import kubectl

PROFILES = profiles()
RUNTIME_BUDGET = 10_000_000
"""k8s.io/apiserver's RuntimeCELCostBudget: what the API server gives one binding's evaluation."""


def _shipped(profile: str, rule: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = BUNDLES_DIR / "vap" / profile / rule.id
    return (
        yaml.safe_load((folder / "policy.yaml").read_text()),
        yaml.safe_load((folder / "binding.yaml").read_text()),
    )


def _with_parameters(policy: dict[str, Any], name: str, parameters: Any) -> dict[str, Any]:
    """The policy as a site patches `variables.params` with kustomize (docs/cel.md), for the cases that set
    parameters; its name changes with it so that each parameter set is its own policy in one tools/cel session."""
    variables = policy["spec"]["variables"]
    assert variables[0]["name"] == PARAMS
    patched = {**policy, "metadata": {**policy["metadata"], "name": name}}
    patched["spec"] = {**policy["spec"], "variables": [{"name": PARAMS, "expression": cel_literal(parameters)}]}
    patched["spec"]["variables"] += variables[1:]
    return patched


def _expectation(rule: Rule, case: Case, slots: int, result: dict[str, Any]) -> str:
    """ "" when the dispatcher's answer is the case's expected outcome, else what differs."""
    admission = result.get("admission")
    if result.get("error") or admission is None:
        return f"error: {result.get('error')}"
    expected = sorted(e.msg for e in case.expected)
    denied = sorted(d["message"] for d in result["decisions"] if d["action"] == "deny")
    agree = denied == expected
    if slots and len(expected) > slots:
        agree = len(denied) == slots and set(denied) <= set(expected)
    if not agree:
        return f"messages {denied} != {expected}"
    if rule.enforcement_action == "warn":
        warned = sorted(w.split("': ", 1)[-1] for w in admission["warnings"])
        if not admission["allowed"] or warned != denied:
            return f"warn binding answered {admission}"
        if not all(w.startswith("Validation failed for ValidatingAdmissionPolicy '") for w in admission["warnings"]):
            return f"warnings {admission['warnings']}"
    elif admission["allowed"] != (not expected):
        return f"allowed {admission['allowed']} but expected {expected}"
    elif expected and not any(admission["message"].endswith(f"denied request: {m}") for m in expected):
        return f"status message {admission['message']!r}"
    # A request outside the policy's matchConstraints is not evaluated (cost 0).
    if result["cost"] > RUNTIME_BUDGET or (expected and result["cost"] == 0):
        return f"cost {result['cost']}"
    return ""


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_admission_case_of_every_profile_is_decided_by_the_shipped_vap_as_expected(profile):
    """Every case of every CEL rule that is an admission request. Audit cases (Gatekeeper's audit of stored
    objects) have no ValidatingAdmissionPolicy counterpart: the API server runs policies only on requests."""
    policies, cases, judged, audit = {}, [], [], 0
    for rule, source in cel_rules():
        policy, binding = _shipped(profile.name, rule)
        assert policy["metadata"]["name"] == binding["spec"]["policyName"] == policy_name(rule)
        for case in rule.cases(profile):
            if case.operation == AUDIT:
                audit += 1
                continue
            name = policy_name(rule)
            if case.parameters is not None:
                name = f"{name}-{len(policies)}"
                policies[name] = {
                    "name": name,
                    "flavour": "vap",
                    "policy": _with_parameters(policy, name, case.parameters),
                    "bindings": [{**binding, "spec": {**binding["spec"], "policyName": name}}],
                }
            else:
                policies.setdefault(name, {"name": name, "flavour": "vap", "policy": policy, "bindings": [binding]})
            cases.append({"id": str(len(cases)), "policy": name, "request": requests.admission_review(case)["request"]})
            judged.append((rule, case, source.slots))
    results = run.evaluate(list(policies.values()), cases, session())
    wrong = [
        (rule.id, case.name, problem)
        for (rule, case, slots), result in zip(judged, results, strict=True)
        if (problem := _expectation(rule, case, slots, result))
    ]
    assert wrong == []
    assert len(judged) > 10 * audit and any(c.expected for _, c, _ in judged)
    assert {rule.id for rule, _, _ in judged} == {rule.id for rule, _ in cel_rules()}


def _env(tmp_path: Path, kubeconfig: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
        "HOME": str(tmp_path),
    }


@pytest.mark.kube
@pytest.mark.parametrize("profile", [p.name for p in PROFILES])
def test_vap_bundle_renders_with_kubectl_and_the_v1_20_test_apiserver_refuses_only_the_missing_vap_api(
    profile: str, kube_cluster: KubeCluster, tmp_path: Path
):
    """`kubectl kustomize` renders every policy and binding of the profile once; `kubectl apply -k
    --dry-run=client` against the v1.20 test kube-apiserver reads each of them and refuses each for the one reason
    that server has: it serves no ValidatingAdmissionPolicy API (Kubernetes 1.30+). A cluster of 1.31 is needed for
    the real apply; the decisions are tested above with the API server's own admission-policy code."""
    folder = BUNDLES_DIR / "vap" / profile
    env = _env(tmp_path, kube_cluster.kubeconfig)
    rendered = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True, text=True, check=True)
    documents = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    expected = {
        (kind, policy_name(rule))
        for rule, _ in cel_rules()
        for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    }
    assert sorted((d["kind"], d["metadata"]["name"]) for d in documents) == sorted(expected)
    proc = subprocess.run(
        [kubectl(), "apply", "-k", str(folder), "--dry-run=client"], capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    # kubectl ends each refusal with its advice line for a missing kind.
    refusals = [line for line in proc.stderr.splitlines() if line.strip() and line != "ensure CRDs are installed first"]
    refused = set()
    for line in refusals:
        assert 'in version "admissionregistration.k8s.io/v1"' in line and "no matches for kind" in line, line
        kind = line.split('no matches for kind "')[1].split('"')[0]
        name = line.split('name: "')[1].split('"')[0]
        refused.add((kind, name))
    assert refused == expected
