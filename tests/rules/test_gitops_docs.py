"""docs/gitops.md: the Argo CD and Flux examples point at folders that exist and render, in the order the
README's install runs (tests/kube/test_install.py); the overlay example renders with the real kubectl.
Neither Argo CD nor Flux runs here: what they do with these objects is not tested."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from kubeflow_trainer_policy.paths import PROJECT_ROOT
from tests.kube.kubectl import kubectl

DOC = PROJECT_ROOT / "docs" / "gitops.md"


def _blocks() -> list[list[dict[str, Any]]]:
    text = DOC.read_text(encoding="utf-8")
    return [[d for d in yaml.safe_load_all(b) if d] for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def _objects(kind: str) -> list[dict[str, Any]]:
    return [d for block in _blocks() for d in block if d.get("kind") == kind and "apiVersion" in d]


def _render(folder: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [kubectl(), "kustomize", str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kube-cache")},
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_argo_cd_application_syncs_the_profile_with_its_waves(tmp_path):
    (app,) = _objects("Application")
    rendered = _render(PROJECT_ROOT / app["spec"]["source"]["path"], tmp_path)
    waves: dict[bool, set[str]] = {True: set(), False: set()}
    for doc in rendered:
        first = doc["kind"] in ("ConstraintTemplate", "SyncSet")
        waves[first].add(doc["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
    assert waves == {True: {"-1"}, False: {"1"}}
    assert app["spec"]["syncPolicy"]["retry"]["limit"] > 0


def test_flux_constraints_depend_on_the_templates(tmp_path):
    templates, constraints = _objects("Kustomization")[:2]
    assert constraints["spec"]["dependsOn"] == [{"name": templates["metadata"]["name"]}]
    first = _render(PROJECT_ROOT / templates["spec"]["path"], tmp_path)
    second = _render(PROJECT_ROOT / constraints["spec"]["path"], tmp_path)
    assert {d["kind"] for d in first} == {"ConstraintTemplate", "SyncSet"}
    assert {d["apiVersion"] for d in second} == {"constraints.gatekeeper.sh/v1beta1"}
    (check,) = templates["spec"]["healthCheckExprs"]
    assert (check["apiVersion"], check["kind"]) == ("templates.gatekeeper.sh/v1", "ConstraintTemplate")


def test_parameter_overlay_renders_with_the_local_profile(tmp_path):
    (overlay,) = [d for d in _objects("Kustomization") if d["apiVersion"].startswith("kustomize.config")]
    (remote,) = overlay["resources"]
    local = remote.split("/bundles/", 1)[1].split("?", 1)[0]
    folder = tmp_path / "overlay"
    folder.mkdir()
    overlay["resources"] = [os.path.relpath(PROJECT_ROOT / "bundles" / local, folder)]  # kustomize: no absolute
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    rendered = {d["metadata"]["name"]: d for d in _render(folder, tmp_path)}
    assert rendered["trainjob-managed-by"]["spec"]["enforcementAction"] == "warn"
    assert rendered["trainjob-name"]["spec"]["enforcementAction"] == "deny"
