"""tools/versions.json's live-test pins: the kube-apiserver module and each release's Gatekeeper manager."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeflow_trainer_policy.paths import PROJECT_ROOT
from kubeflow_trainer_policy.pinned.live import wanted
from kubeflow_trainer_policy.pinned.versions import VERSIONS_FILE, VersionsError, load


def test_kube_apiserver_is_built_from_the_projects_module() -> None:
    tool = load().kube_apiserver
    assert tool is not None and tool.package == "k8s.io/kubernetes/cmd/kube-apiserver"
    go_mod = (PROJECT_ROOT / tool.module_dir / "go.mod").read_text()
    assert f"k8s.io/kubernetes {tool.version}\n" in go_mod
    # every staging module is replaced by the release matching the Kubernetes version (v1.34.4 -> v0.34.4)
    staging = tool.version.replace("v1.", "v0.", 1)
    replaced = [line for line in go_mod.splitlines() if " => k8s.io/" in line]
    assert len(replaced) >= 30 and all(line.endswith(f" {staging}") for line in replaced), replaced


def test_a_manager_for_every_release_whose_source_is_served() -> None:
    pins = load()
    built = [tool.version for tool in pins.managers()]
    assert built == [r.version for r in pins.gatekeeper if not r.gator_unavailable]
    assert all(tool.package == "github.com/open-policy-agent/gatekeeper/v3" for tool in pins.managers())
    # make test: the API server and the oldest manager; make e2e: every manager
    assert [t.name for t in wanted(False)] == ["kube-apiserver", "gatekeeper"]
    assert [t.version for t in wanted(True)][1:] == built


def test_kubernetes_without_its_module_is_one_line_naming_the_field(tmp_path: Path) -> None:
    data = json.loads(VERSIONS_FILE.read_text())
    data["kubernetes"] = {"version": "v1.34.4"}
    bad = tmp_path / "versions.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(VersionsError, match=r"versions\.json: kubernetes\.module_dir: "):
        load(bad)
