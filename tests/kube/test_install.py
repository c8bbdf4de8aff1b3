"""The README's cluster install, run as it is with a real kubectl against the real kube-apiserver.

Gatekeeper itself cannot run here. Its CRDs are minimal stand-ins written for the tests
(tests/kube/crds/gatekeeper/), and the two things its controller does for a ConstraintTemplate are done by
`ConstraintCrdMaker`, a thread of this test: it creates the Constraint kind's CRD from the template
(group constraints.gatekeeper.sh, the template's parameter schema, label gatekeeper.sh/constraint=yes) and
then sets the template's status.created, in that order, as Gatekeeper's template controller does. Every test
that relies on it says so in its name. Everything else (kustomize, the apply, the waits, the API server's
schema checks of every CRD and object) is the real thing.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube.cluster import CRD_DIR, KubeCluster
from tests.kube.kubectl import kubectl

pytestmark = pytest.mark.kube

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
TEMPLATES_API = "/apis/templates.gatekeeper.sh/v1/constrainttemplates"
CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CONSTRAINT_GROUP = "constraints.gatekeeper.sh"


def readme_install_block() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- install commands:[^\n]*-->\n```sh\n(.*?)```\n<!-- end of install commands -->", text, re.S)
    assert match, "README.md lost its marked install block"
    return match.group(1)


def constraint_crd(template: dict[str, Any]) -> dict[str, Any]:
    """The CRD Gatekeeper makes for a template's Constraint kind (only what the API server checks)."""
    kind = template["spec"]["crd"]["spec"]["names"]["kind"]
    parameters = template["spec"]["crd"]["spec"].get("validation", {}).get("openAPIV3Schema") or {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "enforcementAction": {"type": "string"},
                    "match": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "parameters": parameters,
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    versions = [
        {"name": v, "served": True, "storage": v == "v1beta1", "schema": {"openAPIV3Schema": schema}}
        for v in ("v1beta1", "v1alpha1", "v1")
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}.{CONSTRAINT_GROUP}", "labels": {"gatekeeper.sh/constraint": "yes"}},
        "spec": {
            "group": CONSTRAINT_GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": kind.lower(), "singular": kind.lower()},
            "scope": "Cluster",
            "versions": versions,
        },
    }


class ConstraintCrdMaker(threading.Thread):
    """Stands in for Gatekeeper's template controller: CRD first, then status.created. A template named in
    `refuse` gets the error Gatekeeper reports for a template it cannot compile, and no CRD."""

    def __init__(self, cluster: KubeCluster, refuse: frozenset[str] = frozenset()) -> None:
        super().__init__(daemon=True)
        self.cluster, self.refuse = cluster, refuse
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                for template in self.cluster.api_ok("GET", TEMPLATES_API)["items"]:
                    if not (template.get("status") or {}).get("created"):
                        self._handle(template)
                self.stop.wait(0.2)
        except BaseException as exc:  # surfaced by the test
            self.failure = exc

    def _handle(self, template: dict[str, Any]) -> None:
        name = template["metadata"]["name"]
        path = f"{TEMPLATES_API}/{name}/status"
        if name in self.refuse:
            error = {"code": "ingest_error", "message": "rego_type_error: match error (stand-in)"}
            status = {"byPod": [{"id": "gatekeeper-controller-manager-0", "errors": [error]}]}
            self.cluster.api_ok("PATCH", path, {"status": status}, content_type="application/merge-patch+json")
            return
        response = self.cluster.api("POST", CRD_API, constraint_crd(template))
        if not response.ok and response.status_code != 409:
            raise AssertionError(f"the API server refused the CRD of {name}: {response.text}")
        status = {"created": True, "byPod": [{"id": "gatekeeper-controller-manager-0", "observedGeneration": 1}]}
        self.cluster.api_ok("PATCH", path, {"status": status}, content_type="application/merge-patch+json")


def _delete_gatekeeper_objects(cluster: KubeCluster) -> None:
    for crd in cluster.api_ok("GET", CRD_API, params={"labelSelector": "gatekeeper.sh/constraint=yes"})["items"]:
        cluster.api("DELETE", f"{CRD_API}/{crd['metadata']['name']}")
    cluster.api("DELETE", TEMPLATES_API)
    cluster.api("DELETE", "/apis/syncset.gatekeeper.sh/v1alpha1/syncsets")
    deadline = time.monotonic() + 60
    while cluster.api_ok("GET", CRD_API, params={"labelSelector": "gatekeeper.sh/constraint=yes"})["items"]:
        assert time.monotonic() < deadline, "constraint CRDs were not deleted"
        time.sleep(0.2)


@pytest.fixture
def fresh_gatekeeper(kube_cluster: KubeCluster) -> Iterator[KubeCluster]:
    """The cluster with Gatekeeper's CRDs (test stand-ins) and no template, Constraint kind or SyncSet yet."""
    kube_cluster.install_crds(CRD_DIR / "gatekeeper")
    _delete_gatekeeper_objects(kube_cluster)
    yield kube_cluster
    _delete_gatekeeper_objects(kube_cluster)


def run_script(cluster: KubeCluster, script: str, tmp_path: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """The script under `bash -e` (as the README says to run it), from the checkout, with the venv's kubectl."""
    env = {
        "PATH": f"{Path(kubectl()).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "KUBECONFIG": str(cluster.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _kubectl_json(cluster: KubeCluster, tmp_path: Path, *args: str) -> str:
    proc = run_script(cluster, " ".join(["kubectl", *args]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    "bundle", ["bundles/gatekeeper/v2.0", "bundles/gatekeeper-external-data/v2.0", "bundles/gatekeeper/v2.3"]
)
def test_readme_install_with_constraint_crds_made_by_test_for_gatekeeper(fresh_gatekeeper, tmp_path, bundle):
    """The README's block exits 0 in one pass on a fresh cluster (v2.0 as written; the other installs with only
    B= changed), and every template, the SyncSet and every Constraint is then in the cluster."""
    script = readme_install_block()
    assert "B=bundles/gatekeeper/v2.0 " in script
    maker = ConstraintCrdMaker(fresh_gatekeeper)
    maker.start()
    try:
        proc = run_script(fresh_gatekeeper, script.replace("B=bundles/gatekeeper/v2.0 ", f"B={bundle} "), tmp_path)
    finally:
        maker.stop.set()
        maker.join()
    assert maker.failure is None, maker.failure
    assert proc.returncode == 0, proc.stdout + proc.stderr
    applied = _kubectl_json(fresh_gatekeeper, tmp_path, "get", "-k", f"{bundle}/constraints", "-o", "name")
    expected = _kubectl_json(fresh_gatekeeper, tmp_path, "kustomize", f"{bundle}/constraints").count("\nkind: ")
    assert len(applied.split()) == expected, applied
    templates = _kubectl_json(fresh_gatekeeper, tmp_path, "get", "constrainttemplates", "-o", "name").split()
    assert len(applied.split()) == len(templates) >= 10
    syncsets = _kubectl_json(fresh_gatekeeper, tmp_path, "get", "syncsets", "-o", "name").split()
    assert syncsets == ["syncset.syncset.gatekeeper.sh/trainer-policy"]


def test_readme_install_names_the_template_gatekeeper_refused_with_constraint_crds_made_by_test(
    fresh_gatekeeper, tmp_path
):
    """One template Gatekeeper cannot create: the script stops at it, names it with Gatekeeper's error, and
    applies no Constraint (its wait timeout shortened from the README's 120 s to 5 s for the test)."""
    script = readme_install_block()
    assert "--timeout=120s" in script
    maker = ConstraintCrdMaker(fresh_gatekeeper, refuse=frozenset({"trainertrainjobname"}))
    maker.start()
    try:
        proc = run_script(fresh_gatekeeper, script.replace("--timeout=120s", "--timeout=5s"), tmp_path)
    finally:
        maker.stop.set()
        maker.join()
    assert maker.failure is None, maker.failure
    assert proc.returncode != 0
    assert "Gatekeeper has not created trainertrainjobname: " in proc.stderr, proc.stderr
    assert "rego_type_error: match error (stand-in)" in proc.stderr
    constraint_crds = fresh_gatekeeper.api_ok("GET", CRD_API, params={"labelSelector": "gatekeeper.sh/constraint=yes"})
    for crd in constraint_crds["items"]:
        plural, group = crd["spec"]["names"]["plural"], crd["spec"]["group"]
        assert fresh_gatekeeper.api_ok("GET", f"/apis/{group}/v1beta1/{plural}")["items"] == [], plural


def test_whole_profile_in_one_apply_fails_on_a_fresh_cluster(fresh_gatekeeper, tmp_path):
    """Why the README applies two kustomizations: kubectl maps every object before applying any, so the
    profile's folder (both halves, for GitOps tools that order them) cannot go in one `kubectl apply -k`."""
    proc = run_script(fresh_gatekeeper, "kubectl apply -k bundles/gatekeeper/v2.0", tmp_path)
    assert proc.returncode != 0
    assert "ensure CRDs are installed first" in proc.stderr, proc.stderr
