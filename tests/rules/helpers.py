"""Running `trainer-policy review` in-process and Gatekeeper's runner on the generated bundles."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy.gatekeeper.external_data import ProviderClient, ResponseCache
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet, load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import EXTERNAL_DATA_VARIANT, external_data_bundle_dir, gatekeeper_bundle_dir


@dataclass
class CliReview:
    exit_code: int
    body: dict[str, Any]
    stderr: str

    @property
    def messages(self) -> list[str]:
        return sorted(v["msg"] for v in self.body.get("violations", []))


def _write(path: Path, documents: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return str(path)


def review_cli(
    tmp_path: Path,
    review: dict[str, Any],
    *,
    objects: list[dict[str, Any]] = (),  # type: ignore[assignment]
    profile: str = "v2.0",
    parameters: dict[str, dict[str, Any]] | None = None,
    extra: tuple[str, ...] = (),
    variant: str | None = None,
) -> CliReview:
    """`trainer-policy review REVIEW --objects ... --profile P [--variant V] -o json`, in-process."""
    argv = ["review", _write(tmp_path / "review.yaml", [review]), "--profile", profile, "-o", "json", *extra]
    if variant:
        argv += ["--variant", variant]
    if objects:
        argv += ["--objects", _write(tmp_path / "objects.yaml", list(objects))]
    if parameters:
        argv += ["--parameters", _write(tmp_path / "parameters.yaml", [parameters])]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    text = out.getvalue()
    return CliReview(code, json.loads(text) if text.strip() else {}, err.getvalue())


@dataclass(frozen=True)
class Reviewed:
    """One object of a `trainer-policy review -o json` of several: its outcome and violations."""

    outcome: str
    violations: list[dict[str, Any]]

    @property
    def messages(self) -> list[str]:
        return sorted(v["msg"] for v in self.violations)


def review_cli_many(
    folder: Path,
    reviews: dict[str, dict[str, Any]],
    *,
    objects: list[dict[str, Any]] = (),  # type: ignore[assignment]
    profile: str = "v2.0",
    parameters: dict[str, dict[str, Any]] | None = None,
    variant: str | None = None,
) -> tuple[int, dict[str, Reviewed]]:
    """`trainer-policy review FOLDER --objects ... -o json` of many requests that share the cluster objects and
    parameters, in-process: (exit code, name -> its result). One process compiles the profile once, as a CI run
    over a folder of manifests does."""
    manifests = folder / "reviews"
    manifests.mkdir(parents=True)
    for name, review in reviews.items():
        _write(manifests / f"{name}.yaml", [review])
    argv = ["review", str(manifests), "--profile", profile, "-o", "json"]
    if variant:
        argv += ["--variant", variant]
    if objects:
        argv += ["--objects", _write(folder / "objects.yaml", list(objects))]
    if parameters:
        argv += ["--parameters", _write(folder / "parameters.yaml", [parameters])]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    body = json.loads(out.getvalue())
    if "results" not in body:  # one object: the single report, {allowed, violations}
        (name,) = reviews
        outcome = "allowed" if body["allowed"] else "denied"
        return code, {name: Reviewed(outcome, body["violations"])}
    return code, {Path(r["file"]).stem: Reviewed(r["outcome"], r["violations"]) for r in body["results"]}


@cache
def bundle(profile: str, variant: str | None = None) -> PolicySet:
    """What `kubectl apply -k` installs: the profile's bundle or its external-data variant."""
    if variant == EXTERNAL_DATA_VARIANT:
        return load_policy_set([external_data_bundle_dir(profile)])
    return load_policy_set([gatekeeper_bundle_dir(profile)])


def variant_of(rule: Rule) -> str | None:
    """The install that holds the rule: rules that replace another one live in the external-data variant."""
    return EXTERNAL_DATA_VARIANT if rule.alternative_to else None


def runner_review(
    profile: str,
    request: AdmissionRequest,
    *,
    providers: dict[str, ProviderClient],
    objects: list[dict[str, Any]] = (),  # type: ignore[assignment]
    parameters: dict[str, dict[str, Any]] | None = None,
    cache: ResponseCache | None = None,
    variant: str | None = None,
):
    """The bundle's templates and default Constraints (parameters replaced per constraint name)."""
    policy_set = with_parameters(bundle(profile, variant), parameters)
    with GatekeeperRunner(policy_set, providers, cache=cache, objects=objects) as runner:
        return runner.review(request)


def with_parameters(policy_set: PolicySet, parameters: dict[str, dict[str, Any]] | None) -> PolicySet:
    """The policy set with the parameters of the named constraints replaced."""
    if not parameters:
        return policy_set
    from kubeflow_trainer_policy.gatekeeper.constraint import Constraint

    constraints = [
        Constraint(c.kind, c.name, c.match, parameters.get(c.name, c.parameters), c.enforcement_action, c.source)
        for c in policy_set.constraints
    ]
    return PolicySet(policy_set.templates, constraints, policy_set.providers)
