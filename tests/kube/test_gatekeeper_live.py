"""A real Gatekeeper manager (the oldest pinned release's, or each one's with KTP_GATEKEEPER=all: `make e2e`) on the
test API server: the README's install block, the webhook's decisions against `trainer-policy review --engine auto`,
and audit. Selected with `-m gatekeeper`.

Stored objects a case needs are written with the webhook unregistered (they are the cluster's state, not the
request under test), and every case then waits for a canary request to be denied, so the webhook is known to be
answering again before the case's request is sent. Gatekeeper reads stored objects from its sync cache, which
follows the API server by a watch: a case whose decision differs from review's is sent again until it agrees or
CASE_DEADLINE_S passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.pinned.versions import Tool, pins
from tests.kube.cluster import KINDS, Binaries, KubeCluster
from tests.kube.gatekeeper import WEBHOOK_API, WEBHOOK_CONFIG, Gatekeeper
from tests.kube.test_install import readme_install_block, run_script

pytestmark = [pytest.mark.kube, pytest.mark.gatekeeper]

REPO = Path(__file__).resolve().parents[2]
PROFILES = ("v2.0", "v2.3")
TEMPLATES_API = "/apis/templates.gatekeeper.sh/v1/constrainttemplates"
CASE_DEADLINE_S = 15.0
STATUS_DEADLINE_S = 120.0
DENIED_PREFIX = 'admission webhook "validation.gatekeeper.sh" denied the request: '
CANARY = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "1-canary", "namespace": "canary"},
    "spec": {"runtimeRef": {"name": "torch-distributed"}},
}


def _releases() -> list[Tool]:
    managers = pins().managers()
    return managers if os.environ.get("KTP_GATEKEEPER") == "all" else managers[:1]


@pytest.fixture(scope="module", params=_releases(), ids=lambda tool: tool.version)
def gatekeeper(request: pytest.FixtureRequest) -> Iterator[Gatekeeper]:
    """Its own API server, the pinned current one: the session's carries the install test's stand-in Gatekeeper
    CRDs, and is Kubernetes 1.20."""
    with KubeCluster.start(Binaries.pinned()) as cluster:
        manager = Gatekeeper.start(cluster, request.param)
        try:
            yield manager
        finally:
            manager.stop()


def _wait(what: str, probe: Any, deadline_s: float = STATUS_DEADLINE_S) -> Any:
    deadline = time.monotonic() + deadline_s
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {deadline_s:.0f} s waiting for {what}"
        time.sleep(0.5)


def _delete_templates(cluster: KubeCluster) -> None:
    cluster.api("DELETE", TEMPLATES_API)
    _wait("templates deleted", lambda: not cluster.api_ok("GET", TEMPLATES_API)["items"])
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    # Gatekeeper owns them by ownerReference; with no controller-manager, nothing garbage-collects them
    for crd in cluster.api_ok("GET", crds, params={"labelSelector": "gatekeeper.sh/constraint=yes"})["items"]:
        cluster.api("DELETE", f"{crds}/{crd['metadata']['name']}")
    _wait(
        "constraint kinds deleted",
        lambda: not cluster.api_ok("GET", crds, params={"labelSelector": "gatekeeper.sh/constraint=yes"})["items"],
    )


def _constraints(cluster: KubeCluster) -> list[dict[str, Any]]:
    out = []
    for template in cluster.api_ok("GET", TEMPLATES_API)["items"]:
        plural = template["spec"]["crd"]["spec"]["names"]["kind"].lower()
        out += cluster.api_ok("GET", f"/apis/constraints.gatekeeper.sh/v1beta1/{plural}")["items"]
    return out


@pytest.fixture(scope="module", params=PROFILES)
def installed(request: pytest.FixtureRequest, gatekeeper: Gatekeeper, tmp_path_factory: pytest.TempPathFactory):
    """The README's install block, run verbatim but for B=, on a cluster with no template; its result."""
    profile = request.param
    cluster = gatekeeper.cluster
    _delete_templates(cluster)
    script = readme_install_block()
    assert "B=bundles/gatekeeper/v2.0 " in script
    proc = run_script(
        cluster,
        script.replace("B=bundles/gatekeeper/v2.0 ", f"B=bundles/gatekeeper/{profile} "),
        tmp_path_factory.mktemp("install"),
    )
    return profile, proc


def test_readme_install_on_real_gatekeeper(installed, gatekeeper: Gatekeeper) -> None:
    """Exit 0 in one pass; every template created by Gatekeeper, every Constraint given status by it."""
    _, proc = installed
    assert proc.returncode == 0, proc.stdout + proc.stderr + gatekeeper.process.log_tail(40)
    cluster = gatekeeper.cluster
    templates = cluster.api_ok("GET", TEMPLATES_API)["items"]
    assert len(templates) >= 10
    assert all(t["status"]["created"] is True for t in templates), [t["metadata"]["name"] for t in templates]
    constraints = _wait(
        "every Constraint's status",
        lambda: (c := _constraints(cluster)) and all((x.get("status") or {}).get("byPod") for x in c) and c,
    )
    assert len(constraints) == len(templates)
    for constraint in constraints:
        by_pod = constraint["status"]["byPod"]
        assert [p["id"] for p in by_pod] == ["gatekeeper-test-0"], constraint["metadata"]["name"]
        assert by_pod[0].get("enforced") is True, (constraint["metadata"]["name"], by_pod)


@dataclass(frozen=True)
class Case:
    rule: str
    name: str
    sample: Path
    inventory: tuple[Path, ...]


def _create_cases(profile: str) -> list[Case]:
    """Every suite case whose sample is an AdmissionReview of a CREATE (bare objects are audit's)."""
    cases = []
    for suite_path in sorted((REPO / "bundles" / "gatekeeper" / profile).glob("*/suite.yaml")):
        suite = yaml.safe_load(suite_path.read_text())
        for test in suite["tests"]:
            for case in test["cases"]:
                sample = suite_path.parent / case["object"]
                doc = yaml.safe_load(sample.read_text())
                request = doc.get("request") or {}
                if doc.get("kind") != "AdmissionReview" or request.get("operation") != "CREATE":
                    continue
                if request["object"]["kind"] not in KINDS:
                    continue
                inventory = tuple(suite_path.parent / p for p in case.get("inventory", []))
                cases.append(Case(suite_path.parent.name, case["name"], sample, inventory))
    return cases


def _review(profile: str, case: Case) -> list[str]:
    """review's deny violations of the case, as Gatekeeper's webhook words each: `[constraint] msg`."""
    argv = [str(Path(sys.executable).parent / "trainer-policy"), "review", "--engine", "auto", "--profile", profile]
    if case.inventory:
        argv += ["--objects", *map(str, case.inventory)]
    proc = subprocess.run([*argv, "-o", "json", str(case.sample)], capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    output = json.loads(proc.stdout)
    result = output["results"][0] if "results" in output else output  # one object: its result alone
    return sorted(f"[{v['constraint']}] {v['msg']}" for v in result["violations"] if v["enforcementAction"] == "deny")


def _dry_run_create(cluster: KubeCluster, obj: dict[str, Any]) -> tuple[int, list[str] | None]:
    """The API server's answer to a dry-run CREATE: (status, the webhook's denials, or None if not denied)."""
    path = cluster._object_path(obj, with_name=False)
    response = cluster.api("POST", path, obj, params={"dryRun": "All"})
    message = response.json().get("message", "") if not response.ok else ""
    if message.startswith(DENIED_PREFIX):
        return response.status_code, sorted(
            "[" + m if i else m for i, m in enumerate(message.removeprefix(DENIED_PREFIX).split("\n["))
        )
    return response.status_code, None


def _without_webhook(
    gatekeeper: Gatekeeper, objects: list[dict[str, Any]], previous: list[dict[str, Any]] = ()
) -> None:
    """Store `objects` (and delete `previous`, the last case's, but Namespaces, which nothing here would finalize)
    with the webhook unregistered; then wait until it answers again."""
    cluster = gatekeeper.cluster
    cluster.api("DELETE", f"{WEBHOOK_API}/{WEBHOOK_CONFIG}")
    try:
        for obj in previous:
            if obj.get("kind") != "Namespace":
                cluster.api("DELETE", cluster._object_path(obj, with_name=True))
        for obj in objects:
            if obj.get("kind") == "Namespace" or obj["metadata"].get("namespace") is None:
                pass
            else:
                cluster.create_namespace(obj["metadata"]["namespace"])
            cluster.apply(obj)
        cluster.create_namespace(CANARY["metadata"]["namespace"])
    finally:
        gatekeeper.register_webhook()
    _wait("the webhook to answer again", lambda: _dry_run_create(cluster, CANARY)[1], 30)


def test_webhook_decides_as_review(installed, gatekeeper: Gatekeeper) -> None:
    profile, proc = installed
    assert proc.returncode == 0, proc.stderr
    cluster = gatekeeper.cluster
    cluster.create_namespace("canary")
    compared, rejected_by_schema, mismatches = 0, [], []
    stored: list[dict[str, Any]] = []
    for case in _create_cases(profile):
        previous, stored = stored, [d for p in case.inventory for d in yaml.safe_load_all(p.read_text()) if d]
        _without_webhook(gatekeeper, stored, previous)
        expected = _review(profile, case)
        obj = yaml.safe_load(case.sample.read_text())["request"]["object"]
        if obj["metadata"].get("namespace"):
            cluster.create_namespace(obj["metadata"]["namespace"])
        deadline = time.monotonic() + CASE_DEADLINE_S
        while True:
            status, denied = _dry_run_create(cluster, obj)
            if status == 422:
                rejected_by_schema.append(f"{case.rule}/{case.name}")
                break
            got = denied or []
            if got == expected:
                compared += 1
                break
            if time.monotonic() > deadline:
                mismatches.append((f"{case.rule}/{case.name}", status, got, expected))
                break
            time.sleep(0.5)
    print(
        f"{profile}: {compared} cases agree, {len(rejected_by_schema)} refused by the CRD schema: {rejected_by_schema}"
    )
    assert not mismatches, mismatches
    assert compared >= 20


def _as_status_message(message: str) -> str:
    """Gatekeeper's audit writes at most 256 bytes of a message into the Constraint's status: 253 and "..."
    (pkg/audit/manager.go, msgSize and truncateString)."""
    raw = message.encode()
    return message if len(raw) <= 256 else raw[:253].decode(errors="ignore") + "..."


def test_audit_reports_a_stored_violation(installed, gatekeeper: Gatekeeper) -> None:
    """A TrainJob stored while the webhook was away (its name is not a DNS-1035 label): Gatekeeper's audit puts it
    on the Constraint's status with the message `review --audit` gives for it."""
    profile, proc = installed
    assert proc.returncode == 0, proc.stderr
    folder = REPO / "bundles" / "gatekeeper" / profile / "trainjob-name" / "samples"
    sample, inventory = folder / "audit-checked.yaml", folder / "cluster-1.yaml"
    stored = yaml.safe_load(sample.read_text())
    assert stored["kind"] == "TrainJob"
    _without_webhook(gatekeeper, [d for d in yaml.safe_load_all(inventory.read_text()) if d] + [stored])
    review = subprocess.run(
        [
            str(Path(sys.executable).parent / "trainer-policy"),
            "review",
            "--engine",
            "auto",
            "--profile",
            profile,
            "--audit",
            "--objects",
            str(inventory),
            "-o",
            "json",
            str(sample),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert review.returncode == 1, review.stdout + review.stderr
    expected = [v["msg"] for v in json.loads(review.stdout)["violations"] if v["constraint"] == "trainjob-name"]
    assert len(expected) == 1, review.stdout

    def reported() -> list[dict[str, Any]]:
        constraint = next(c for c in _constraints(gatekeeper.cluster) if c["metadata"]["name"] == "trainjob-name")
        return [
            v
            for v in (constraint.get("status") or {}).get("violations", [])
            if v.get("name") == stored["metadata"]["name"] and v.get("namespace") == stored["metadata"]["namespace"]
        ]

    try:
        violations = _wait("audit to report the stored TrainJob", reported)
    except AssertionError as exc:
        audit = [line[:400] for line in gatekeeper.log_text().splitlines() if '"audit"' in line or "audit" in line]
        raise AssertionError(f"{exc}\n" + "\n".join(audit[-15:])) from None
    assert [v["message"] for v in violations] == [_as_status_message(m) for m in expected]
    assert violations[0]["kind"] == "TrainJob" and violations[0]["enforcementAction"] == "deny"
