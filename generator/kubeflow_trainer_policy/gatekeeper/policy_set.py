"""Loading templates, constraints and Provider objects from files and folders, as `kubectl apply` would."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.gatekeeper.constraint import (
    Constraint,
    is_constraint,
    parse_constraint,
    validate_parameters,
)
from kubeflow_trainer_policy.gatekeeper.template import ConstraintTemplate, is_template, parse_template
from kubeflow_trainer_policy_provider.documents import dig
from kubeflow_trainer_policy_provider.reader import Document, read_documents, read_single

PROVIDER_API_VERSIONS = ("externaldata.gatekeeper.sh/v1beta1", "externaldata.gatekeeper.sh/v1alpha1")
YAML_SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_PROVIDER_TIMEOUT_SECONDS = 3
"""Used when a Provider has no spec.timeout (the CRD's field is an integer number of seconds)."""


@dataclass(frozen=True)
class ProviderObject:
    name: str
    url: str
    timeout_seconds: float
    ca_bundle: str


@dataclass
class PolicySet:
    templates: dict[str, ConstraintTemplate] = field(default_factory=dict)
    """By Constraint kind."""
    constraints: list[Constraint] = field(default_factory=list)
    providers: dict[str, ProviderObject] = field(default_factory=dict)


KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def yaml_files(paths: Iterable[str | Path]) -> list[Path]:
    """The YAML files of the given files and folders. A folder with a kustomization is what
    `kubectl apply -k` would install from it (its `resources`, followed); any other folder is every
    YAML file below it."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            kustomization = next((path / n for n in KUSTOMIZATION_FILES if (path / n).is_file()), None)
            if kustomization is not None:
                files.extend(_kustomization_files(kustomization))
            else:
                files.extend(sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file()))
        elif path.exists():
            files.append(path)
        else:
            raise InputError(str(path), "no such file or directory")
    return list(dict.fromkeys(files))


def _kustomization_files(kustomization: Path) -> list[Path]:
    resources = read_single(kustomization).body.get("resources") or []
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise InputError(str(kustomization), "must be a list of paths", field="resources")
    return yaml_files(kustomization.parent / r for r in resources)


def _provider(doc: Document) -> ProviderObject:
    name = dig(doc.body, "metadata", "name")
    url = dig(doc.body, "spec", "url")
    if not isinstance(name, str) or not name:
        raise InputError(doc.source, "required", field="metadata.name")
    if not isinstance(url, str) or not url.startswith("https://"):
        raise InputError(doc.source, "must be an https:// URL", field="spec.url")
    timeout = dig(doc.body, "spec", "timeout")
    if timeout is None:
        timeout = DEFAULT_PROVIDER_TIMEOUT_SECONDS
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise InputError(doc.source, f"must be a whole number of seconds >= 1, got {timeout!r}", field="spec.timeout")
    return ProviderObject(name, url, float(timeout), str(dig(doc.body, "spec", "caBundle") or ""))


def is_provider(body: dict[str, Any]) -> bool:
    return body.get("kind") == "Provider" and body.get("apiVersion") in PROVIDER_API_VERSIONS


def load_providers(paths: Iterable[str | Path]) -> dict[str, ProviderObject]:
    """Only the Provider objects of the given files/folders."""
    return {
        provider.name: provider
        for path in yaml_files(paths)
        for doc in read_documents(path)
        if is_provider(doc.body)
        for provider in [_provider(doc)]
    }


def load_policy_set(paths: Iterable[str | Path], parser: RegoParser | None = None) -> PolicySet:
    """Templates, Constraints and Providers from the given files/folders; other objects are ignored."""
    parser = parser or RegoParser()
    policy_set = PolicySet()
    constraint_docs: list[Constraint] = []
    for path in yaml_files(paths):
        for doc in read_documents(path):
            body = doc.body
            if is_template(body):
                template = parse_template(doc, parser)
                if template.kind in policy_set.templates:
                    raise InputError(doc.source, f"template {template.name} is defined twice")
                policy_set.templates[template.kind] = template
            elif is_constraint(body):
                constraint_docs.append(parse_constraint(doc))
            elif is_provider(body):
                provider = _provider(doc)
                policy_set.providers[provider.name] = provider
    for constraint in constraint_docs:
        add_constraint(policy_set, constraint)
    return policy_set


def add_constraint(policy_set: PolicySet, constraint: Constraint) -> None:
    template = policy_set.templates.get(constraint.kind)
    if template is None:
        raise InputError(constraint.source, f"no ConstraintTemplate defines kind {constraint.kind}", field="kind")
    validate_parameters(constraint, template)
    policy_set.constraints.append(constraint)


def with_parameters(policy_set: PolicySet, overrides: dict[str, Any], source: str) -> PolicySet:
    """Constraint parameters from a `--parameters` file: {<constraint name>: {<parameter>: value}}."""
    names = {c.name for c in policy_set.constraints}
    for name, parameters in overrides.items():
        if name not in names:
            raise InputError(source, f"no constraint named {name!r} (have: {', '.join(sorted(names))})", field=name)
        if not isinstance(parameters, dict):
            raise InputError(source, "must be a mapping of parameters", field=name)
    updated = PolicySet(policy_set.templates, [], policy_set.providers)
    for c in policy_set.constraints:
        merged = {**c.parameters, **overrides.get(c.name, {})}
        origin = source if c.name in overrides else c.source
        add_constraint(updated, Constraint(c.kind, c.name, c.match, merged, c.enforcement_action, origin))
    return updated
