"""The TrainJob admission checks beyond the catalog's cases: Kubeflow's own runtimes and TrainJobs are admitted by
every rule of each profile, and the rules that need the runtime leave a missing one to trainjob-runtime-ref."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.admission import admission_review_document, apiserver_request, inventory_document
from kubeflow_trainer_policy.catalog.trainjob_fixtures import runtime, trainjob
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, audit_request, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import CompiledTemplate, GatekeeperRunner
from kubeflow_trainer_policy.profiles import generated_profiles, get_profile
from kubeflow_trainer_policy_provider.reader import Document
from tests.rules.helpers import bundle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OWN = FIXTURES / "trainjob-checks"
SHARED = FIXTURES / "runtimes"
"""Runtime fixtures of the PodSets work (per profile), reviewed as well when they are present."""


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def manifests(profile: str) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """(runtimes, [(file, TrainJob)]) of the profile: this test's own fixtures and, if present, the shared ones."""
    runtimes = _documents(OWN / "runtimes.yaml")
    files = sorted(OWN.glob("trainjob-*.yaml")) + sorted((OWN / profile).glob("trainjob-*.yaml"))
    shared = SHARED / profile
    if shared.is_dir():
        names = {(r["kind"], r["metadata"]["name"]) for r in runtimes}
        runtimes += [r for r in _documents(shared / "runtimes.yaml") if (r["kind"], r["metadata"]["name"]) not in names]
        files += sorted(shared.glob("trainjob-*.yaml"))
    trainjobs = [(str(f.relative_to(FIXTURES)), d) for f in files for d in _documents(f)]
    return runtimes, trainjobs


def _create(obj: dict[str, Any]) -> AdmissionRequest:
    return request_from_document(Document("fixture", admission_review_document(apiserver_request("CREATE", obj))))


MANIFEST_CASES = [
    pytest.param(p.name, mode, id=f"{p.name}-{mode}") for p in generated_profiles() for mode in ("create", "audit")
]


@pytest.mark.parametrize(("profile", "mode"), MANIFEST_CASES)
def test_shipped_runtimes_and_trainjobs_are_admitted(profile: str, mode: str):
    runtimes, trainjobs = manifests(profile)
    assert len(runtimes) >= 5 and len(trainjobs) >= 6, (runtimes, trainjobs)
    objects = [*runtimes, *(t for _, t in trainjobs)]
    # One runner for the profile, as `review` of a folder uses one: the templates compiled once, each object judged.
    with GatekeeperRunner(bundle(profile), {}, objects=runtimes) as runner:
        results = [runner.review(_create(obj) if mode == "create" else audit_request(obj)) for obj in objects]
    for obj, result in zip(objects, results, strict=True):
        label = f"{obj['kind']}/{obj['metadata']['name']}"
        assert result.errors == [], label
        assert [v.msg for v in result.violations] == [], label
        assert result.allowed, label


def test_fixtures_use_the_profiles_override_field():
    for profile in generated_profiles():
        _, trainjobs = manifests(profile.name)
        fields = {
            f
            for _, t in trainjobs
            for f in ("podSpecOverrides", "podTemplateOverrides", "runtimePatches")
            if f in t["spec"]
        }
        assert fields == {profile.override_field}, profile.name


RUNTIME_READERS = ("trainerTrainJobMLPolicy", "trainerTrainJobDeprecatedRuntime")


def _violations(profile: str, template_kind: str, obj: dict[str, Any], cluster: list[dict[str, Any]]) -> list:
    template = next(t for t in bundle(profile).templates.values() if t.kind.lower() == template_kind.lower())
    compiled = CompiledTemplate(template, None)
    violations, _ = compiled.violations(_create(obj).as_input(), {}, inventory_document(cluster))
    return violations


UNREADABLE = [
    ("missing", {"runtime": "missing"}, [runtime("other")]),
    ("not_synced", {}, []),
    ("unsupported", {"kind": "JobSet", "api_group": "jobset.x-k8s.io"}, [runtime()]),
]


@pytest.mark.parametrize("profile", [p.name for p in generated_profiles()])
@pytest.mark.parametrize("template_kind", RUNTIME_READERS)
@pytest.mark.parametrize(("reason", "ref", "cluster"), UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_rules_reading_the_runtime_leave_an_unreadable_one_to_runtime_ref(profile, template_kind, reason, ref, cluster):
    p = get_profile(profile)
    env = [{"name": "PET_NNODES", "value": "1"}]
    obj = trainjob(p, trainer={"numProcPerNode": 2, "numNodes": 2, "env": env, "command": ["tune", "run"]}, **ref)
    assert _violations(profile, template_kind, obj, cluster) == []
    # The same TrainJob with its runtime present is reported, so silence above is about the runtime.
    if template_kind == "trainerTrainJobMLPolicy":
        found = _violations(profile, template_kind, trainjob(p, trainer={"numProcPerNode": 2, "env": env}), [runtime()])
        assert [v["details"]["field"] for v in found] == ["spec.trainer.env"]


def test_runtime_ref_reports_each_unreadable_reason_once():
    p = get_profile("v2.3")
    for _, ref, cluster in UNREADABLE:
        found = _violations("v2.3", "TrainerTrainJobRuntimeRef", trainjob(p, **ref), cluster)
        assert len(found) == 1 and found[0]["details"]["field"] == "spec.runtimeRef", found
