"""bundles/gatekeeper/<profile>/: ConstraintTemplates, Constraints, Provider, SyncSet, gator suites, kustomization."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from generator.catalog.model import Case, Rule
from generator.profiles import Profile
from generator.render import requests
from generator.render.header import header
from generator.render.rego import lib, render_module
from generator.render.yaml_text import dump, dump_all

PROVIDER_URL = "https://trainer-jobset-provider.trainer-policy-system:8443/"
PROVIDER_TIMEOUT_SECONDS = 2
CA_BUNDLE_PLACEHOLDER = "REPLACE-WITH-BASE64-PEM-CA-BUNDLE-OF-THE-PROVIDER"
TARGET = "admission.k8s.gatekeeper.sh"
SYNCSET_NAME = "trainer-policy"


def _yaml(source: str, body: Any, note: str = "") -> str:
    return header(source) + note + dump(body)


def constraint_template(rule: Rule, profile: Profile) -> dict[str, Any]:
    annotations = {
        "metadata.gatekeeper.sh/title": rule.title,
        "metadata.gatekeeper.sh/version": rule.version,
        "description": " ".join(rule.description.split()),
        "trainer.kubeflow.org/policy-profile": profile.name,
    }
    if rule.data.inventory:
        # One requirement per kind (all must be synced); a requirement's inner list holds alternatives.
        annotations["metadata.gatekeeper.sh/requires-sync-data"] = json.dumps(
            [[{"groups": [k.group], "versions": [k.version], "kinds": [k.kind]}] for k in rule.data.inventory]
        )
    return {
        "apiVersion": "templates.gatekeeper.sh/v1",
        "kind": "ConstraintTemplate",
        "metadata": {"name": rule.template_name, "annotations": annotations},
        "spec": {
            "crd": {
                "spec": {
                    "names": {"kind": rule.kind},
                    "validation": {"openAPIV3Schema": rule.parameters_schema()},
                }
            },
            "targets": [
                {
                    "target": TARGET,
                    "code": [
                        {
                            "engine": "Rego",
                            "source": {
                                "version": "v1",
                                "rego": render_module(rule, profile),
                                "libs": [lib(name).source for name in rule.libs],
                            },
                        }
                    ],
                }
            ],
        },
    }


def constraint(rule: Rule) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "enforcementAction": "deny",
        "match": {"kinds": [{"apiGroups": list(m.api_groups), "kinds": list(m.kinds)} for m in rule.match]},
    }
    if rule.parameters:
        spec["parameters"] = rule.default_parameters()
    return {
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": rule.kind,
        "metadata": {"name": rule.id},
        "spec": spec,
    }


def provider_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "externaldata.gatekeeper.sh/v1beta1",
        "kind": "Provider",
        "metadata": {"name": name},
        "spec": {"url": PROVIDER_URL, "timeout": PROVIDER_TIMEOUT_SECONDS, "caBundle": CA_BUNDLE_PLACEHOLDER},
    }


PROVIDER_NOTE = (
    "# spec.caBundle is a placeholder: set it to the base64 of the PEM CA that signed the provider's serving\n"
    "# certificate (a kustomize patch, or `trainer-policy certs`). Until it is replaced Gatekeeper cannot reach\n"
    "# the provider: every lookup fails and override changes are denied with an Internal violation (fail\n"
    "# closed). The URL is the provider's in-cluster Service; Gatekeeper requires https:// (TLS 1.3).\n"
)


def syncset(rules: list[Rule]) -> dict[str, Any] | None:
    kinds = sorted({(k.group, k.version, k.kind) for r in rules for k in r.data.inventory})
    if not kinds:
        return None
    return {
        "apiVersion": "syncset.gatekeeper.sh/v1alpha1",
        "kind": "SyncSet",
        "metadata": {"name": SYNCSET_NAME},
        "spec": {"gvks": [{"group": g, "version": v, "kind": k} for g, v, k in kinds]},
    }


def _sample_name(case: Case) -> str:
    return case.name.replace("_", "-")


def _assertions(case: Case) -> list[dict[str, Any]]:
    if not case.expected:
        return [{"violations": "no"}]
    assertions: list[dict[str, Any]] = [{"violations": len(case.expected)}]
    for msg, count in Counter(e.msg for e in case.expected).items():
        assertions.append({"violations": count, "message": f"^{re.escape(msg)}$"})
    return assertions


def _suite(rule: Rule, cases: list[Case]) -> dict[str, Any]:
    suite_cases = []
    for case in cases:
        entry: dict[str, Any] = {"name": _sample_name(case), "object": f"samples/{_sample_name(case)}.yaml"}
        if case.cluster:
            entry["inventory"] = [f"samples/{_sample_name(case)}-inventory.yaml"]
        entry["assertions"] = _assertions(case)
        suite_cases.append(entry)
    return {
        "apiVersion": "test.gatekeeper.sh/v1alpha1",
        "kind": "Suite",
        "metadata": {"name": rule.id},
        "tests": [
            {"name": rule.id, "template": "template.yaml", "constraint": "constraint.yaml", "cases": suite_cases}
        ],
    }


SUITE_NOTE = (
    "# Cases that need non-default parameters, a literal external_data answer (provider failures) or audit input\n"
    "# are in the Rego unit tests (policies/) and pytest (tests/rules/), not here. `trainer-policy test` backs\n"
    "# Provider objects in this folder with the provider's own handler over each case's inventory; `gator verify`\n"
    "# cannot run templates that call external_data.\n"
)


def rule_files(rule: Rule, profile: Profile) -> dict[str, str]:
    """Files of one rule's folder, relative to it."""
    source = f"generator/catalog (rule {rule.id}, profile {profile.name})"
    files = {
        "template.yaml": _yaml(source, constraint_template(rule, profile)),
        "constraint.yaml": _yaml(source, constraint(rule)),
    }
    for name in rule.data.external_data_providers:
        files["provider.yaml"] = _yaml(source, provider_object(name), PROVIDER_NOTE)
    cases = [c for c in rule.cases(profile) if requests.suite_runnable(c)]
    for case in cases:
        name = _sample_name(case)
        body = requests.admission_review(case) if case.operation != "CREATE" else case.object
        note = f"# {' '.join(case.description.split())}\n"
        files[f"samples/{name}.yaml"] = _yaml(source, body, note)
        if case.cluster:
            files[f"samples/{name}-inventory.yaml"] = header(source) + dump_all(list(case.cluster))
    files["suite.yaml"] = _yaml(source, _suite(rule, cases), SUITE_NOTE)
    return files


KUSTOMIZE_NOTE = (
    "# `kubectl apply -k` installs the templates, their default Constraints, the Provider and the SyncSet.\n"
    "# A Constraint's kind exists only once Gatekeeper has processed its template: on a first install, apply\n"
    "# twice (or wait for the templates' status.created) if kubectl reports `no matches for kind`.\n"
)


def bundle_files(rules: list[Rule], profile: Profile) -> dict[str, str]:
    """Files of bundles/gatekeeper/<profile>/, relative to it."""
    source = f"generator/catalog (profile {profile.name})"
    files: dict[str, str] = {}
    resources: list[str] = []
    sync = syncset(rules)
    if sync is not None:
        note = "# Kinds rules read from data.inventory (JobSets only with jobSetSource: Inventory).\n"
        files["syncset.yaml"] = _yaml(source, sync, note)
        resources.append("syncset.yaml")
    provider_listed = False
    for rule in rules:
        for path, text in rule_files(rule, profile).items():
            files[f"{rule.id}/{path}"] = text
        if rule.data.external_data_providers and not provider_listed:
            resources.append(f"{rule.id}/provider.yaml")
            provider_listed = True
        resources += [f"{rule.id}/template.yaml", f"{rule.id}/constraint.yaml"]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }
    files["kustomization.yaml"] = _yaml(source, kustomization, KUSTOMIZE_NOTE)
    return files
