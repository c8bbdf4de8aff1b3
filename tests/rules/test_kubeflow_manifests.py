"""Kubeflow's own manifests are admitted: every runtime Kubeflow Trainer ships with a release, a TrainJob on each
of them, and the example TrainJobs of its repository pass every rule of the matching profile.

The manifests are upstream's files as they were read (tests/fixtures/kubeflow-manifests/README.md gives the
repository, path and commit of each one), not runtimes written here. A denial is a false positive of a rule."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.admission import admission_review_document, apiserver_request
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, audit_request, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import EXTERNAL_DATA_VARIANT
from kubeflow_trainer_policy.profiles import generated_profiles
from kubeflow_trainer_policy_provider.reader import Document
from tests.rules.helpers import bundle

SHIPPED = Path(__file__).resolve().parents[1] / "fixtures" / "kubeflow-manifests"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
DEFAULT_NAMESPACE = "default"
"""Where `kubectl apply -f` puts an object whose manifest names no namespace (upstream's examples name none)."""
DISABLED = "trainer.kubeflow.org/webhook-validation"
PROFILES = [p.name for p in generated_profiles()]
INSTALLS = [None, EXTERNAL_DATA_VARIANT]
"""The bundle with every rule, and its variant whose override-mutability rule asks the provider."""
VOLUME_MOUNT = (
    "spec.runtimeRef: Invalid: must have volumeMount with name - initializer in container dataset-initializer of the "
    "dataset-initializer job"
)
UPSTREAM_DENIES = {
    "v2.3": {
        # The example's TrainingRuntime gives its dataset-initializer container no volumeMount at all (its comment
        # says the dataset is mounted at /workspace/dataset; nothing in the runtime or the Trainer's JobSet builder
        # mounts it). Trainer v2.3.0's jobset plugin denies the TrainJob for that (kubeflow/trainer#3714,
        # docs/upstream/checks.md), so the profile must deny it too: an upstream example that the release rejects.
        "v2.3/05-multi-step.yaml: TrainJob/multi-step-example": [VOLUME_MOUNT],
    },
}
"""{profile: {object: violations}}: shipped objects that the release itself denies, with why. Everything else
must be admitted."""


def _folders(profile: str) -> list[Path]:
    """The profile's folder, then each subfolder: one cluster each (a subfolder holds other versions of runtimes
    the folder has, which a cluster cannot hold twice)."""
    top = SHIPPED / profile
    return [top, *sorted(d for d in top.iterdir() if d.is_dir())]


def _documents(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    for d in docs:
        if d["kind"] != "ClusterTrainingRuntime":
            d["metadata"].setdefault("namespace", DEFAULT_NAMESPACE)
    return docs


def _trainjob_on(rt: dict[str, Any]) -> dict[str, Any]:
    """The least a user writes to run a runtime: a TrainJob that names it and nothing else."""
    name = "on-" + re.sub(r"[^a-z0-9-]", "-", rt["metadata"]["name"])
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": rt["metadata"].get("namespace", DEFAULT_NAMESPACE)},
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": rt["kind"], "name": rt["metadata"]["name"]}
        },
    }


def shipped(folder: Path) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """(runtimes, [(label, object)]): every shipped runtime and TrainJob of one folder, plus a minimal TrainJob on
    each runtime."""
    runtimes: list[dict[str, Any]] = []
    objects: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in _documents(path):
            objects.append((f"{path.relative_to(SHIPPED)}: {doc['kind']}/{doc['metadata']['name']}", doc))
            if doc["kind"] in RUNTIME_KINDS:
                runtimes.append(doc)
    for rt in runtimes:
        tj = _trainjob_on(rt)
        objects.append((f"minimal TrainJob/{tj['metadata']['name']} on {rt['kind']}/{rt['metadata']['name']}", tj))
    return runtimes, objects


def _request(obj: dict[str, Any], mode: str) -> AdmissionRequest:
    if mode == "audit":
        return audit_request(obj)
    old = copy.deepcopy(obj) if mode == "update" else None
    review = admission_review_document(apiserver_request(mode.upper(), obj, old))
    return request_from_document(Document("kubeflow-manifests", review))


MODES = ("create", "update", "audit")


def _denials(
    runner: GatekeeperRunner, objects: list[tuple[str, dict[str, Any]]], modes: tuple[str, ...] = MODES
) -> dict[str, list[str]]:
    """{"<mode> <object>": [errors and violation messages]} of every object the runner does not admit."""
    found = {}
    for mode in modes:
        for label, obj in objects:
            result = runner.review(_request(obj, mode))
            if result.errors or result.violations or not result.allowed:
                messages = [*map(str, result.errors), *(v.msg for v in result.violations)]
                found[f"{mode} {label}"] = messages or ["not allowed"]
    return found


@pytest.mark.parametrize("variant", INSTALLS, ids=["all-rules", "external-data"])
@pytest.mark.parametrize("profile", PROFILES)
def test_shipped_manifests_are_admitted(profile: str, variant: str | None):
    """CREATE, an unchanged re-apply (UPDATE) and audit of each shipped object, with the runtimes synced, under
    every Constraint of the install (the templates' default parameters); only what upstream denies is denied."""
    denials = {}
    with GatekeeperRunner(bundle(profile, variant), {}) as runner:
        for folder in _folders(profile):
            runtimes, objects = shipped(folder)
            runner.set_objects(runtimes)
            denials |= _denials(runner, objects)
    expected = {f"{mode} {label}": msgs for mode in MODES for label, msgs in UPSTREAM_DENIES.get(profile, {}).items()}
    unexpected = {k: v for k, v in denials.items() if expected.get(k) != v}
    assert unexpected == {}, "\n".join(f"{label}:\n  " + "\n  ".join(msgs) for label, msgs in unexpected.items())
    assert set(denials) == set(expected), sorted(set(expected) - set(denials))


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_holds_the_shipped_runtimes_and_trainjobs(profile: str):
    runtimes, objects = shipped(SHIPPED / profile)
    names = {r["metadata"]["name"] for r in runtimes}
    # Every release ships these; the fixtures may not shrink to nothing unnoticed.
    assert {"torch-distributed", "deepspeed-distributed", "mlx-distributed"} <= names, names
    assert any(r["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] == "dataset-initializer" for r in runtimes)
    trainjobs = [o for _, o in objects if o["kind"] == "TrainJob"]
    assert len(trainjobs) >= len(runtimes)
    # Every TrainJob's runtime is among the fixtures, so the rules that read it do read it.
    for tj in trainjobs:
        assert tj["spec"]["runtimeRef"]["name"] in names, tj["metadata"]["name"]


def test_readme_gives_the_source_of_every_fixture():
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    files = sorted(SHIPPED.rglob("*.yaml"))
    assert {f.relative_to(SHIPPED).parts[0] for f in files} == set(PROFILES)
    for path in files:
        name = path.relative_to(SHIPPED).as_posix()
        assert f"`{name}`" in readme, f"{name} has no source in the README"


@pytest.mark.parametrize("profile", PROFILES)
def test_the_same_review_denies_a_broken_copy(profile: str):
    """The admissions above are not vacuous: the same reviews deny a TrainJob whose runtime is not synced and a
    shipped runtime whose initializer runs two replicas (with upstream's skip label removed). CREATE and audit:
    whether a runtime UPDATE is validated differs between releases (docs/upstream/trainjob-admission.md)."""
    runtimes, _ = shipped(SHIPPED / profile)
    rt = copy.deepcopy(
        next(r for r in runtimes if r["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] == "dataset-initializer")
    )
    rt["metadata"].get("labels", {}).pop(DISABLED, None)
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    broken = [("two initializer replicas", rt), ("runtime not synced", _trainjob_on(rt))]
    others = [r for r in runtimes if r["metadata"]["name"] != rt["metadata"]["name"]]
    modes = ("create", "audit")
    with GatekeeperRunner(bundle(profile), {}, objects=others) as runner:
        denials = _denials(runner, broken, modes)
    assert set(denials) == {f"{mode} {label}" for mode in modes for label, _ in broken}, denials
    for mode in modes:
        assert any("always must be 1" in m for m in denials[f"{mode} two initializer replicas"]), denials
