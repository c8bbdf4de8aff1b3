"""bundles/gatekeeper/<profile>/ and bundles/gatekeeper-external-data/<profile>/: ConstraintTemplates, Constraints,
SyncSet, gator suites, kustomizations."""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from typing import Any

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule
from kubeflow_trainer_policy.cel.gatekeeper import ENGINE, code_entry, in_template
from kubeflow_trainer_policy.cel.source import SOURCE_FILE, load_source
from kubeflow_trainer_policy.paths import EXTERNAL_DATA_DIR, GATEKEEPER_DIR
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy.render import requests
from kubeflow_trainer_policy.render.header import header
from kubeflow_trainer_policy.render.rego import shipped_libs
from kubeflow_trainer_policy.render.yaml_text import dump, dump_all

TARGET = "admission.k8s.gatekeeper.sh"
SYNCSET_NAME = "trainer-policy"
TEMPLATES_DIR = "templates"
"""<profile>/templates/: the kustomization of what Gatekeeper must see first (ConstraintTemplates, SyncSet)."""
CONSTRAINTS_DIR = "constraints"
"""<profile>/constraints/: the kustomization of the Constraints, applied once their kinds exist."""
CONSTRAINT_DIR = "constraint"
"""<rule>/constraint/: the rule's Constraint and its own kustomization (kustomize loads no file outside a
kustomization's folder, so the constraints kustomization can only take the Constraint as a folder)."""
ARGOCD_SYNC_WAVE = "argocd.argoproj.io/sync-wave"
ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
TEMPLATES_ANNOTATIONS = {ARGOCD_SYNC_WAVE: "-1"}
CONSTRAINTS_ANNOTATIONS = {
    ARGOCD_SYNC_WAVE: "1",
    # Argo CD's dry run cannot map a kind whose CRD Gatekeeper has not created yet.
    ARGOCD_SYNC_OPTIONS: "SkipDryRunOnMissingResource=true",
}
ENGINE_FILES = {SOURCE_FILE: ENGINE}
"""Engines besides Rego that a rule's folder may hold, each in a file beside src.rego, rendered per profile into that
engine's entry after the Rego one (cel.yaml: kubeflow_trainer_policy.cel.source). Gatekeeper evaluates one engine per
template and prefers K8sNativeValidation where it runs (3.18+); an older Gatekeeper, or `gator`, runs the Rego. A
rule's CEL enters its template only when the oldest supported Gatekeeper's CEL libraries compile it
(kubeflow_trainer_policy.cel.gatekeeper.in_template)."""
GATOR_SUITE_API_VERSION = "test.gatekeeper.sh/v1alpha1"
PROVIDER_SUITE_API_VERSION = "trainer-policy.kubeflow.org/v1alpha1"
"""Suites of templates that call external_data: gator reads only test.gatekeeper.sh Suites, so it skips them."""


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
        "metadata": {
            "name": rule.template_name,
            "annotations": annotations,
        },
        "spec": {
            "crd": {
                "spec": {
                    "names": {"kind": rule.kind},
                    "validation": {"openAPIV3Schema": rule.parameters_schema()},
                }
            },
            "targets": [{"target": TARGET, "code": code(rule, profile)}],
        },
    }


def code(rule: Rule, profile: Profile) -> list[dict[str, Any]]:
    """The template's `code`: the rule's Rego with the libs it imports, then each other engine its folder holds."""
    rego = {"version": "v1", "rego": rule.source, "libs": [lib.source for lib in shipped_libs(rule, profile)]}
    entries: list[dict[str, Any]] = [{"engine": "Rego", "source": rego}]
    cel = load_source(rule)
    if cel is not None and in_template(cel):
        entries.append(code_entry(cel, rule, profile))
    return entries


def constraint(rule: Rule, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """The rule's Constraint: its default parameters, or the given ones (a suite's case)."""
    spec: dict[str, Any] = {
        "enforcementAction": rule.enforcement_action,
        "match": {"kinds": [{"apiGroups": list(m.api_groups), "kinds": list(m.kinds)} for m in rule.match]},
    }
    if parameters is not None:
        spec["parameters"] = parameters
    elif rule.parameters:
        spec["parameters"] = rule.default_parameters()
    return {
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": rule.kind,
        "metadata": {"name": rule.id},
        "spec": spec,
    }


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


CONSTRAINT_FILE = f"{CONSTRAINT_DIR}/constraint.yaml"


def _sample_name(case: Case) -> str:
    return case.name.replace("_", "-")


def _assertions(case: Case) -> list[dict[str, Any]]:
    if not case.expected:
        return [{"violations": "no"}]
    assertions: list[dict[str, Any]] = [{"violations": len(case.expected)}]
    for msg, count in Counter(e.msg for e in case.expected).items():
        assertions.append({"violations": count, "message": f"^{re.escape(msg)}$"})
    return assertions


def _suite_case(case: Case, inventories: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": _sample_name(case), "object": f"samples/{_sample_name(case)}.yaml"}
    if case.cluster:
        entry["inventory"] = [inventories[case.name]]
    entry["assertions"] = _assertions(case)
    return entry


def _parameter_sets(cases: list[Case]) -> dict[str, int]:
    """The non-default parameters of the cases, numbered in the order of first use: one Constraint each."""
    numbers: dict[str, int] = {}
    for case in cases:
        if case.parameters is not None:
            numbers.setdefault(json.dumps(case.parameters, sort_keys=True), len(numbers) + 1)
    return numbers


def _parameters_file(number: int) -> str:
    return f"samples/constraint-{number}.yaml"


def _suite(rule: Rule, cases: list[Case], inventories: dict[str, str]) -> dict[str, Any]:
    suite: dict[str, Any] = {
        "apiVersion": PROVIDER_SUITE_API_VERSION if rule.data.external_data_providers else GATOR_SUITE_API_VERSION,
        "kind": "Suite",
        "metadata": {"name": rule.id},
    }
    if rule.data.external_data_providers:
        suite["providers"] = list(rule.data.external_data_providers)
    default = [_suite_case(c, inventories) for c in cases if c.parameters is None]
    tests = [{"name": rule.id, "template": "template.yaml", "constraint": CONSTRAINT_FILE, "cases": default}]
    for text, number in _parameter_sets(cases).items():
        chosen = [_suite_case(c, inventories) for c in cases if json.dumps(c.parameters, sort_keys=True) == text]
        tests.append(
            {
                "name": f"{rule.id}-parameters-{number}",
                "template": "template.yaml",
                "constraint": _parameters_file(number),
                "cases": chosen,
            }
        )
    suite["tests"] = [t for t in tests if t["cases"]]
    return suite


SUITE_NOTE = (
    "# gator format: `gator verify` and `trainer-policy test` run it. An AdmissionReview sample is an admission\n"
    '# request; a bare object is reviewed as Gatekeeper\'s audit does (operation ""). Cases with parameters\n'
    "# of their own are a test of their own, with its Constraint under samples/.\n"
)
PROVIDER_SUITE_NOTE = (
    "# The same format as a gator suite, under trainer-policy.kubeflow.org so that `gator verify` skips it: gator\n"
    "# registers no external_data builtin and cannot load this template. `trainer-policy test` runs it, answering\n"
    "# the `providers` with the provider's own request handler over each case's inventory. Provider failures are\n"
    "# in the rule's Rego tests (built from its cases.py) and pytest (tests/rules/).\n"
)


def suite_file_name(rule: Rule) -> str:
    return "external-data-suite.yaml" if rule.data.external_data_providers else "suite.yaml"


def _sample(case: Case) -> dict[str, Any]:
    """An AUDIT case is the stored object itself; every other case is the API server's AdmissionReview."""
    if case.operation == AUDIT:
        assert case.object is not None, case.name
        return case.object
    return requests.admission_review(case)


def rule_files(rule: Rule, profile: Profile) -> dict[str, str]:
    """Files of one rule's folder, relative to it."""
    source = f"policies/{rule.id}/ (profile {profile.name})"
    files = {
        "template.yaml": _yaml(source, constraint_template(rule, profile)),
        "kustomization.yaml": _yaml(source, _kustomization(["template.yaml"]), RULE_KUSTOMIZE_NOTE),
        CONSTRAINT_FILE: _yaml(source, constraint(rule)),
        f"{CONSTRAINT_DIR}/kustomization.yaml": _yaml(source, _kustomization(["constraint.yaml"])),
    }
    cases = [c for c in rule.cases(profile) if requests.suite_runnable(c)]
    for case in cases:
        note = f"# {' '.join(case.description.split())}\n"
        files[f"samples/{_sample_name(case)}.yaml"] = _yaml(source, _sample(case), note)
    inventories = _clusters(cases)
    for path, users in _users(inventories).items():
        case = next(c for c in cases if c.name == users[0])
        names = ", ".join(_sample_name(c) for c in cases if c.name in users)
        note = "".join(f"# {line}\n" for line in textwrap.wrap(f"The cluster objects of the cases {names}.", 110))
        files[path] = header(source) + note + dump_all(list(case.cluster))
    for text, number in _parameter_sets(cases).items():
        users = ", ".join(_sample_name(c) for c in cases if json.dumps(c.parameters, sort_keys=True) == text)
        note = "".join(f"# {line}\n" for line in textwrap.wrap(f"The Constraint of the cases {users}.", 110))
        files[_parameters_file(number)] = _yaml(source, constraint(rule, json.loads(text)), note)
    note = PROVIDER_SUITE_NOTE if rule.data.external_data_providers else SUITE_NOTE
    files[suite_file_name(rule)] = _yaml(source, _suite(rule, cases, inventories), note)
    return files


def _clusters(cases: list[Case]) -> dict[str, str]:
    """Case name -> the file of its cluster objects (its suite case's inventory). Cases with the same objects
    share one file, numbered in the order of first use: most cases of a rule read the same runtimes."""
    numbers: dict[str, int] = {}
    files = {}
    for case in cases:
        if case.cluster:
            number = numbers.setdefault(dump_all(list(case.cluster)), len(numbers) + 1)
            files[case.name] = f"samples/cluster-{number}.yaml"
    return files


def _users(inventories: dict[str, str]) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {}
    for case, path in inventories.items():
        users.setdefault(path, []).append(case)
    return users


def _kustomization(resources: list[str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    if annotations:
        body["commonAnnotations"] = dict(annotations)
    body["resources"] = resources
    return body


RULE_KUSTOMIZE_NOTE = (
    "# The rule's ConstraintTemplate alone (as in gatekeeper-library); its Constraint is in constraint/, installed\n"
    "# by ../constraints once Gatekeeper has made the Constraint's kind from this template.\n"
)
TEMPLATES_NOTE = (
    "# Step 1 of 2: what Gatekeeper must see first, the ConstraintTemplates{sync}.\n"
    "# Gatekeeper makes each Constraint kind (a CRD) from its template; apply ../constraints once they exist\n"
    "# (see the README):\n"
    "#   kubectl apply -k <profile>/templates   ...wait...   kubectl apply -k <profile>/constraints\n"
    "# The Argo CD sync wave orders it before the Constraints when one Application syncs ../ (docs/gitops.md).\n"
)
CONSTRAINTS_NOTE = (
    "# Step 2 of 2: the Constraints, once Gatekeeper has created their kinds from ../templates (see the README).\n"
    "# Argo CD: a later sync wave, and no dry run for kinds that do not exist yet; Flux: a Kustomization that\n"
    "# dependsOn the templates one (docs/gitops.md).\n"
)
PROFILE_NOTE = (
    "# {what}: templates/ and constraints/ together, for a GitOps tool that orders them itself\n"
    "# (Argo CD sync waves: docs/gitops.md). On a fresh cluster, `kubectl apply -k` of this folder fails: the\n"
    "# Constraints' kinds do not exist until Gatekeeper has created them from the templates. With kubectl,\n"
    "# apply templates/, wait, then constraints/ (see the README).\n"
)
WHAT_DEFAULT = "Every rule of the profile, with override mutability reading synced JobSets (the SyncSet)"
WHAT_VARIANT = (
    "The same rules, with override mutability asking the JobSet state provider (external data) instead of\n"
    "# reading synced JobSets; install the provider and its Provider object first (deploy/README.md)"
)


def _variant(rules: list[Rule], external_data: bool) -> list[Rule]:
    """The rules one kustomization installs: the default one, or the external-data variant's alternatives."""
    if not external_data:
        return [r for r in rules if not r.alternative_to]
    replaced = {r.alternative_to for r in rules if r.alternative_to}
    return [r for r in rules if r.id not in replaced]


def _install(rules: list[Rule], source: str, where: dict[str, str], what: str) -> dict[str, str]:
    """The three kustomizations of one install: templates/, constraints/, and the install's own folder, which holds
    both. `where`: each rule's folder relative to the install's folder."""
    files: dict[str, str] = {}
    template_resources: list[str] = []
    sync = syncset(rules)
    if sync is not None:
        note = "# The kinds the rules read from data.inventory: Gatekeeper syncs them (SyncSet, Gatekeeper >= 3.15).\n"
        files[f"{TEMPLATES_DIR}/syncset.yaml"] = _yaml(source, sync, note)
        template_resources.append("syncset.yaml")
    template_resources += [f"../{where[rule.id]}" for rule in rules]
    sync_text = " and the SyncSet of the kinds they read" if sync is not None else ""
    files[f"{TEMPLATES_DIR}/kustomization.yaml"] = _yaml(
        source, _kustomization(template_resources, TEMPLATES_ANNOTATIONS), TEMPLATES_NOTE.format(sync=sync_text)
    )
    files[f"{CONSTRAINTS_DIR}/kustomization.yaml"] = _yaml(
        source,
        _kustomization([f"../{where[rule.id]}/{CONSTRAINT_DIR}" for rule in rules], CONSTRAINTS_ANNOTATIONS),
        CONSTRAINTS_NOTE,
    )
    files["kustomization.yaml"] = _yaml(
        source, _kustomization([TEMPLATES_DIR, CONSTRAINTS_DIR]), PROFILE_NOTE.format(what=what)
    )
    return files


def bundle_files(rules: list[Rule], profile: Profile) -> dict[str, str]:
    """Files of bundles/gatekeeper/<profile>/ and of bundles/gatekeeper-external-data/<profile>/, relative to
    bundles/. The external-data variant's own rules live in the second folder, apart from the rules gator can load:
    gator registers no external_data builtin, so `gator test -f bundles/gatekeeper/<profile>/` and `gator verify`
    of that folder would fail on them. The variant's kustomizations take the shared rules from the first folder."""
    source = f"policies/ (profile {profile.name})"
    default_root = f"{GATEKEEPER_DIR}/{profile.name}"
    variant_root = f"{EXTERNAL_DATA_DIR}/{profile.name}"
    files: dict[str, str] = {}
    for rule in rules:
        root = variant_root if rule.alternative_to else default_root
        for path, text in rule_files(rule, profile).items():
            files[f"{root}/{rule.id}/{path}"] = text
    default_rules = _variant(rules, external_data=False)
    for path, text in _install(default_rules, source, {r.id: r.id for r in default_rules}, WHAT_DEFAULT).items():
        files[f"{default_root}/{path}"] = text
    variant_rules = _variant(rules, external_data=True)
    if variant_rules != default_rules:
        where = {r.id: r.id if r.alternative_to else f"../../{default_root}/{r.id}" for r in variant_rules}
        for path, text in _install(variant_rules, source, where, WHAT_VARIANT).items():
            files[f"{variant_root}/{path}"] = text
    return files
