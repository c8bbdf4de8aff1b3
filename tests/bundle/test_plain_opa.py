"""The bundle alone in OPA (as `opa run -b` loads it) decides every suite case as the Gatekeeper runner does."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.bundle.archive import write_archive
from kubeflow_trainer_policy.bundle.build import build_bundle
from kubeflow_trainer_policy.catalog.trainjob_fixtures import default_runtime
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy_provider.reader import Document
from tests.bundle.helpers import (
    PROFILES,
    OpaBundle,
    calls_external_data,
    cli,
    plain_opa_decision,
    restricted_policy_set,
    runnable_kinds,
    runner_decision,
    suite_cases,
    tar_members,
)

DECISION = "kubeflow.trainer.decision"
CASES = [case for profile in PROFILES for case in suite_cases(profile, runnable_kinds(profile))]


@pytest.fixture(scope="module")
def runners():
    made = {profile: GatekeeperRunner(restricted_policy_set(profile, runnable_kinds(profile))) for profile in PROFILES}
    yield made
    for runner in made.values():
        runner.close()


@pytest.mark.parametrize("profile", PROFILES)
def test_bundle_ships_exactly_the_templates_plain_opa_can_run(built_bundles, profile):
    files = tar_members(built_bundles[profile].read_bytes())
    constraints = json.loads(files["kubeflow/trainer/data.json"])["constraints"]
    assert {c["kind"] for c in constraints} == runnable_kinds(profile)
    source = load_policy_set([gatekeeper_bundle_dir(profile)])
    assert len(constraints) == len([c for c in source.constraints if c.kind in runnable_kinds(profile)])
    for c in constraints:
        [original] = [o for o in source.constraints if o.name == c["name"]]
        assert (c["parameters"], c["match"], c["enforcementAction"]) == (
            original.parameters,
            original.match,
            original.enforcement_action,
        )
    assert not any(calls_external_data(n, c.decode()) for n, c in files.items() if n.endswith(".rego"))
    left_out = {t.name for k, t in source.templates.items() if k not in runnable_kinds(profile)}
    assert set(json.loads(files[".manifest"])["metadata"]["left_out"]) == left_out


def test_the_suites_cover_allowed_and_denied_cases():
    assert {case.suite for case in CASES} >= {"trainjob-managed-by", "v1-job-managed-by", "runtime-reserved-replicas"}
    assert len(CASES) > 50


@pytest.fixture(scope="module")
def activated(built_bundles):
    """Each profile's bundle activated once, as `opa run -b` holds it; each case brings its own data.inventory."""
    made = {profile: OpaBundle(built_bundles[profile].read_bytes()) for profile in PROFILES}
    yield made
    for opa in made.values():
        opa.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_plain_opa_decides_every_suite_case_like_the_gatekeeper_runner(activated, runners, case):
    opa, inventory = activated[case.profile], inventory_document(case.objects)
    want = runner_decision(runners[case.profile], case.request, case.objects)
    assert opa.query_with_inventory(DECISION, {"review": case.request.as_input()}, inventory) == want
    # kube-mgmt and the apiserver send the whole AdmissionReview: input.request.
    raw = case.raw if case.raw.get("kind") == "AdmissionReview" else {"request": case.request.as_input()}
    assert opa.query_with_inventory(DECISION, raw, inventory) == want


def _review(operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    request = {"uid": "u-1", "operation": operation, "object": obj, "oldObject": old}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _trainjob(managed_by: str | None, namespace: str = "team-a", name: str = "job-1", **labels: str) -> dict:
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}}
    if managed_by is not None:
        spec["managedBy"] = managed_by
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": metadata, "spec": spec}


def test_deny_warn_and_admission_review_documents(built_bundles):
    denied = _review("CREATE", _trainjob("example.com/other"))
    # The cluster's runtime (the runtime checks read it from data.inventory), so managedBy is the one violation.
    with OpaBundle(built_bundles["v2.0"].read_bytes(), inventory_document([default_runtime()])) as opa:
        decision = opa.query("kubeflow.trainer.decision", denied)
        assert decision["allowed"] is False
        [violation] = decision["violations"]
        line = f"[{violation['constraint']}] {violation['msg']}"
        assert opa.query("kubeflow.trainer.deny", denied) == [line]
        assert opa.query("kubeflow.trainer.warn", denied) == []
        response = opa.query("kubeflow.trainer.admission_review", denied)
        assert response["apiVersion"] == "admission.k8s.io/v1" and response["kind"] == "AdmissionReview"
        assert response["response"] == {
            "uid": "u-1",
            "allowed": False,
            "status": {"code": 403, "reason": "Forbidden", "message": line},
        }
        allowed = _review("CREATE", _trainjob(None))
        assert opa.query("kubeflow.trainer.decision", allowed) == {"allowed": True, "violations": []}
        assert opa.query("kubeflow.trainer.admission_review", allowed)["response"] == {"uid": "u-1", "allowed": True}
        # DELETE: Gatekeeper evaluates the deleted object; managedBy does not check DELETE.
        assert opa.query("kubeflow.trainer.decision", _review("DELETE", None, _trainjob("x")))["allowed"] is True


def test_input_without_a_request_fails_closed(built_bundles):
    with OpaBundle(built_bundles["v2.0"].read_bytes()) as opa:
        decision = opa.query("kubeflow.trainer.decision", {"object": _trainjob("x")})
        assert decision["allowed"] is False and "no AdmissionRequest" in decision["errors"][0]
        assert opa.query("kubeflow.trainer.deny", {}) == decision["errors"]
        no_objects = opa.query("kubeflow.trainer.decision", {"request": {"operation": "CREATE"}})
        assert no_objects["allowed"] is False and "neither object nor oldObject" in no_objects["errors"][0]


# Match criteria: the entry point's Rego against the runner's (kubeflow_trainer_policy.gatekeeper.match), one
# constraint per criterion, every constraint of one template that denies managedBy "example.com/other".
MATCHES: dict[str, dict[str, Any]] = {
    "any": {},
    "kind": {"kinds": [{"apiGroups": ["trainer.kubeflow.org"], "kinds": ["TrainJob"]}]},
    "other-kind": {"kinds": [{"apiGroups": ["trainer.kubeflow.org"], "kinds": ["TrainingRuntime"]}]},
    "other-group": {"kinds": [{"apiGroups": ["batch"], "kinds": ["TrainJob"]}]},
    "wildcards": {"kinds": [{"apiGroups": ["*"], "kinds": ["*"]}]},
    "team-prefix": {"namespaces": ["team-*"]},
    "exact-namespace": {"namespaces": ["team-a"]},
    "exclude-suffix": {"excludedNamespaces": ["*-b"]},
    "gold": {"labelSelector": {"matchLabels": {"tier": "gold"}}},
    "not-gold": {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}},
    "in": {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "x"]}]}},
    "has-tier": {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
    "no-tier": {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}},
    "cluster": {"scope": "Cluster"},
    "namespaced": {"scope": "Namespaced"},
    "name-prefix": {"name": "job-*"},
    "name-exact": {"name": "other"},
    "prod-namespace": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
}
PROD = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"env": "prod"}}}
DEV = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b", "labels": {"env": "dev"}}}
OTHER = "example.com/other"
REQUESTS = {
    "gold-in-team-a": (_review("CREATE", _trainjob(OTHER, tier="gold")), [PROD, DEV]),
    "plain-in-team-b": (_review("CREATE", _trainjob(OTHER, namespace="team-b")), [PROD, DEV]),
    "silver-in-ops-b": (_review("CREATE", _trainjob(OTHER, namespace="ops-b", name="other", tier="s")), [PROD, DEV]),
    "cluster-scoped": (_review("CREATE", _trainjob(OTHER, namespace="")), [PROD]),
    "update-old-gold": (
        _review("UPDATE", _trainjob(OTHER, namespace="team-b"), _trainjob(OTHER, namespace="team-b", tier="gold")),
        [DEV],
    ),
    "namespace-not-synced": (_review("CREATE", _trainjob(OTHER, tier="gold")), []),
}


@pytest.fixture(scope="module")
def match_bundle(tmp_path_factory) -> tuple[bytes, GatekeeperRunner]:
    folder = tmp_path_factory.mktemp("constraints")
    shutil.copy(gatekeeper_bundle_dir("v2.0") / "trainjob-managed-by" / "template.yaml", folder / "template.yaml")
    actions = ["deny", "warn", "dryrun"]
    documents = [
        {
            "apiVersion": "constraints.gatekeeper.sh/v1beta1",
            "kind": "TrainerTrainJobManagedBy",
            "metadata": {"name": name},
            "spec": {"match": match, "enforcementAction": actions[i % 3]},
        }
        for i, (name, match) in enumerate(MATCHES.items())
    ]
    (folder / "constraints.yaml").write_text(yaml.safe_dump_all(documents))
    content = build_bundle(folder, "test", "0.0.0")
    write_archive(folder / "bundle.tar.gz", content.files)
    runner = GatekeeperRunner(load_policy_set([folder]))
    yield (folder / "bundle.tar.gz").read_bytes(), runner
    runner.close()


@pytest.mark.parametrize("request_name", list(REQUESTS))
def test_match_criteria_agree_with_the_runner(match_bundle, request_name):
    bundle, runner = match_bundle
    review, objects = REQUESTS[request_name]
    request = request_from_document(Document("case.yaml", review))
    want = runner_decision(runner, request, objects)
    got = plain_opa_decision(bundle, review, objects)
    # Error texts differ (the runner names --objects, the bundle data.inventory); whether there is one must not.
    assert bool(got.pop("errors", None)) == bool(want.pop("errors", None))
    assert got == want
    matched = {v["constraint"] for v in got["violations"]}
    assert 0 < len(matched) < len(MATCHES), "every request must match some criteria and miss others"


def test_inventory_is_read_from_data_inventory(match_bundle):
    bundle, _ = match_bundle
    review = _review("CREATE", _trainjob(OTHER, tier="gold"))
    with OpaBundle(bundle, inventory_document([PROD])) as opa:
        names = {v["constraint"] for v in opa.query("kubeflow.trainer.decision", review)["violations"]}
    assert "prod-namespace" in names


def test_build_refuses_a_match_the_entry_point_cannot_evaluate(tmp_path):
    shutil.copy(gatekeeper_bundle_dir("v2.0") / "trainjob-managed-by" / "template.yaml", tmp_path / "template.yaml")
    constraint = {
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": "TrainerTrainJobManagedBy",
        "metadata": {"name": "bad"},
        "spec": {"match": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}},
    }
    (tmp_path / "constraint.yaml").write_text(yaml.safe_dump(constraint))
    with pytest.raises(InputError, match=r"spec\.match\.labelSelector: unknown selector operator 'Near'"):
        build_bundle(tmp_path, "test", "0.0.0")


def test_default_parameters_are_in_data_json(built_bundles):
    files = tar_members(built_bundles["v2.0"].read_bytes())
    constraints = {c["name"]: c for c in json.loads(files["kubeflow/trainer/data.json"])["constraints"]}
    assert constraints["trainjob-managed-by"]["parameters"]["allowedValues"] == [
        "trainer.kubeflow.org/trainjob-controller",
        "kueue.x-k8s.io/multikueue",
    ]


def test_build_from_own_constraints_carries_their_parameters(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    source = gatekeeper_bundle_dir("v2.0") / "trainjob-managed-by"
    shutil.copy(source / "template.yaml", folder / "template.yaml")
    constraint = yaml.safe_load((source / "constraint" / "constraint.yaml").read_text())
    constraint["spec"]["parameters"]["allowedValues"] = ["example.com/mine"]
    (folder / "constraint.yaml").write_text(yaml.safe_dump(constraint))
    proc = cli("bundle", "build", "--constraints", str(folder), "--profile", "site", "--output-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    bundle = (tmp_path / "kubeflow-trainer-policy-site.tar.gz").read_bytes()
    assert plain_opa_decision(bundle, _review("CREATE", _trainjob("example.com/mine")), []) == {
        "allowed": True,
        "violations": [],
    }
    assert plain_opa_decision(bundle, _review("CREATE", _trainjob("kueue.x-k8s.io/multikueue")), [])["allowed"] is False
    both = cli("bundle", "build", "--constraints", str(folder), "--output-dir", str(tmp_path))
    assert both.returncode == 2 and "--constraints: needs exactly one --profile" in both.stderr
