"""What a cluster must accept of the CEL: every rule either carries CEL or says why it stays Rego-only; each shipped
template's CEL compiles in the environment of the oldest Kubernetes it declares (and not the one before, so the
declared version is the true minimum) and where the oldest supported Gatekeeper compiles it; and objects far
larger than real ones stay within Gatekeeper's cost budget for one evaluation (k8s.io/apiserver's PerCallLimit; a
ValidatingAdmissionPolicy binding gets ten times as much) while CEL still equals Rego on them."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from kubeflow_trainer_policy.catalog import load_catalog
from kubeflow_trainer_policy.cel import gatekeeper, run, toolchain
from kubeflow_trainer_policy.cel.source import MIN_COMPATIBILITY, rego_only
from kubeflow_trainer_policy.profiles import generated_profiles
from tests.cel.helpers import (
    LIBRARIES,
    TALLY,
    cel_rules,
    differences,
    kept_rego_messages,
    session,
    shipped_templates,
)

PROFILES = generated_profiles()


def test_every_rule_has_cel_or_a_reason_to_stay_rego_only():
    with_cel = {rule.id for rule, _ in cel_rules()}
    without = set(rego_only())
    assert with_cel.isdisjoint(without)
    assert with_cel | without == {rule.id for rule in load_catalog()}
    assert len(with_cel) >= 5


def _previous(version: str) -> str:
    major, minor = version.split(".")
    return f"{major}.{int(minor) - 1}"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_each_shipped_cel_compiles_from_its_declared_kubernetes_version_and_not_before(profile):
    for rule, source in cel_rules():
        policy = {"name": rule.id, "flavour": "gatekeeper", "template": gatekeeper.judged_template(rule, profile)}
        assert run.check([policy], source.compatibility) == [], (rule.id, source.compatibility)
        if source.compatibility != MIN_COMPATIBILITY:
            assert run.check([policy], _previous(source.compatibility)) != [], (rule.id, source.compatibility)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_each_templates_cel_compiles_where_the_oldest_supported_gatekeeper_runs_it(profile):
    """Gatekeeper runs a template's CEL instead of its Rego, compiles it only when it first evaluates it, and then a
    compile error denies every request the Constraint matches (failurePolicy Fail). So every K8sNativeValidation
    entry a bundle ships compiles with the declarations of Gatekeeper's driver and the CEL libraries of the oldest
    supported Gatekeeper; one with generateVAP also compiles where the oldest API server Gatekeeper generates
    policies on validates the policy; and every rule's CEL left out of its template does not compile there, so
    none is left out without cause."""
    left_out = []
    for rule, _ in cel_rules():
        template = gatekeeper.shipped_template(rule, profile)
        if not gatekeeper.has_cel(template):
            left_out.append(rule.id)
            judged = {"name": rule.id, "flavour": "gatekeeper", "template": gatekeeper.judged_template(rule, profile)}
            assert run.check([judged], gatekeeper.GATEKEEPER_CEL_LIBRARY, "gatekeeper") != [], rule.id
            continue
        policy = {"name": rule.id, "flavour": "gatekeeper", "template": template}
        assert run.check([policy], gatekeeper.GATEKEEPER_CEL_LIBRARY, "gatekeeper") == [], rule.id
        (entry,) = [c for c in template["spec"]["targets"][0]["code"] if c["engine"] == gatekeeper.ENGINE]
        if entry["source"]["generateVAP"]:
            assert run.check([policy], _previous(gatekeeper.GATEKEEPER_VAP_KUBERNETES)) == [], rule.id
    assert left_out == [rule.id for rule, source in cel_rules() if not gatekeeper.in_template(source)]


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_templates_cel_compiles_on_each_supported_gatekeepers_own_library(library):
    """Every K8sNativeValidation entry the bundles ship compiles with the declarations of Gatekeeper's driver on the
    k8s.io/apiserver and cel-go that Gatekeeper release vendors, at that library's own default compatibility
    version (the one its driver compiles in)."""
    minor = int(toolchain.library(library).apiserver.split(".")[1]) - 1
    policies = [
        {"name": f"{profile.name}/{rule.id}", "flavour": "gatekeeper", "template": template}
        for profile in PROFILES
        for rule, _ in cel_rules()
        if gatekeeper.has_cel(template := gatekeeper.shipped_template(rule, profile))
    ]
    assert len(policies) == len(PROFILES) * len(cel_rules())
    assert run.check(policies, f"1.{minor}", "gatekeeper", library) == []


def _job(i: int) -> dict[str, Any]:
    env = [{"name": f"E{n}", "value": "v"} for n in range(8)]
    containers = [{"name": f"c{k}", "image": "img", "env": env} for k in range(6)]
    return {
        "name": "launcher" if i == 0 else f"job-{i}",
        "replicas": 2,
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": containers, "serviceAccountName": f"sa-{i}"}}},
        },
    }


def _runtime_of(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "big"},
        "spec": {"template": {"spec": {"replicatedJobs": jobs}}},
    }


def _runtime(jobs: int) -> dict[str, Any]:
    runtime = _runtime_of([_job(i) for i in range(jobs)])
    runtime["metadata"]["labels"] = {"trainer.kubeflow.org/support": "deprecated"}
    return runtime


def _trainjob(patches: int, jobs: int, account: str) -> dict[str, Any]:
    def patch(p: int) -> dict[str, Any]:
        replicated = [_job(i) for i in range(jobs)]
        for job in replicated:
            job["template"]["spec"]["template"]["spec"]["serviceAccountName"] = account
        return {"manager": f"m{p}", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated}}}}

    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "big", "namespace": "team-a"},
        "spec": {
            "runtimeRef": {"name": account},
            "suspend": True,
            "runtimePatches": [patch(p) for p in range(patches)],
        },
    }


def _review(operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    kind = obj["kind"]
    return {
        "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": kind},
        "resource": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": kind.lower() + "s"},
        "name": obj["metadata"]["name"],
        "namespace": obj["metadata"].get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": "alice"},
        "object": obj,
        "oldObject": old,
    }


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_large_objects_stay_within_gatekeepers_budget_and_cel_equals_rego(profile, library):
    """A runtime of 64 reserved jobs (real ones have up to 4), and a TrainJob update whose 8 patches of 16 jobs all
    change serviceAccountName (real ones have a patch or two of a few jobs), each job with 6 containers of 8 envs;
    on the CEL library of every supported Gatekeeper."""
    reviews = [
        (_review("UPDATE", _runtime(64), _runtime(63)), ("runtime-reserved-replicas", "runtime-deprecated")),
        (_review("UPDATE", _trainjob(8, 16, "b"), _trainjob(8, 16, "a")), ("trainjob-immutable-fields",)),
    ]
    rules = {rule.id: rule for rule, _ in cel_rules()}
    batch = [(rules[rule_id], review, None) for review, ids in reviews for rule_id in ids]
    before, TALLY.max_cost = TALLY.truncated, 0
    assert differences(profile, batch, library) == []
    assert TALLY.truncated > before  # the big objects have more violations than any rule's slots
    assert 0 < TALLY.max_cost <= gatekeeper.PER_CALL_LIMIT


OBJECT_BYTES = int(1.4 * 1024 * 1024)
"""A runtime a little under etcd's 1.5 MiB (the rest of a stored object is metadata)."""
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def _plain_job(i: int) -> dict[str, Any]:
    return {"name": f"worker-{i}", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}


def _trainer_job(i: int, replicas: int, container: str) -> dict[str, Any]:
    return {
        "name": f"trainer-{i}",
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": container}]}}},
        },
    }


def _as_many_as_fit(make: Any) -> list[dict[str, Any]]:
    one = len(json.dumps(make(99999), separators=(",", ":"))) + 1
    return [make(i) for i in range(OBJECT_BYTES // one)]


def _reserved_job(i: int) -> dict[str, Any]:
    """A job labelled as the trainer with 2 replicas and without its `node` container (benchmarks'
    runtime_update)."""
    pod = {"containers": [{"name": "sidecar", "image": "img"}], "initContainers": [{"name": "setup", "image": "img"}]}
    return {
        "name": f"worker-{i}",
        "replicas": 2,
        "template": {"metadata": {"labels": {ANCESTOR: "trainer"}}, "spec": {"template": {"spec": pod}}},
    }


@cache
def _etcd_sized_reviews() -> dict[str, dict[str, Any]]:
    """The largest runtimes etcd stores, built once and judged on every library and profile (Rego once each)."""
    plain = _runtime_of(_as_many_as_fit(_plain_job))
    invalid = _runtime_of([_trainer_job(i, 2, "sidecar") for i in range(RESERVED_LIMIT)])
    labelled = _runtime_of([_trainer_job(i, 1, "node") for i in range(3000)])
    reserved = _as_many_as_fit(_reserved_job)
    assert len(plain["spec"]["template"]["spec"]["replicatedJobs"]) > 15000
    assert len(reserved) > 5000
    return {
        "plain": _review("CREATE", plain, None),
        "invalid": _review("CREATE", invalid, None),
        "labelled": _review("CREATE", labelled, None),
        "reserved_update": _review("UPDATE", _runtime_of(reserved), _runtime_of(reserved[:-1])),
    }


RESERVED_LIMIT = 1000
"""runtime-reserved-replicas' `reservedLimit`: the most reserved jobs its CEL reads in full."""


def _too_many(count: int) -> str:
    return (
        f"spec.template.spec.replicatedJobs: Too many: {count}: must have at most {RESERVED_LIMIT} reserved jobs "
        "(labelled trainer.kubeflow.org/trainjob-ancestor-step) for this policy to evaluate"
    )


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_runtimes_as_large_as_etcd_stores_are_judged_within_gatekeepers_budget(profile, library):
    """JobSet sets no maxItems on replicatedJobs, so a runtime holds as many jobs as 1.4 MiB allows. A valid one of
    plain jobs (about 16,000) is admitted: running out of the budget would deny it. 1,000 reserved jobs with 2
    replicas and without their container (the limit) are reported within the budget (the slots report 8 of Rego's
    messages). Past 1,000 reserved jobs the CEL denies with a message naming the count and the limit, within the
    budget, where a full check would run out: 3,000 valid trainer-labelled jobs, and an UPDATE of two 1.4 MiB
    runtimes whose every job (about 5,500) is an invalid trainer (Rego denies it too), which ran out of budget on
    every library before reserved replicas 1.6.0. On the CEL library of every supported Gatekeeper."""
    rule = next(rule for rule, _ in cel_rules() if rule.id == "runtime-reserved-replicas")
    reviews = _etcd_sized_reviews()
    judged = [(rule, reviews[name], None) for name in ("plain", "invalid")]
    before, TALLY.max_cost = TALLY.truncated, 0
    assert differences(profile, judged, library, keep_rego=True) == []
    assert TALLY.truncated == before + 1  # the invalid one: 1,000 or 2,000 violations, 8 reported
    assert 0 < TALLY.max_cost <= gatekeeper.PER_CALL_LIMIT
    refused = ("labelled", "reserved_update")
    outcomes = gatekeeper.evaluate(
        [gatekeeper.Review(rule, reviews[name], None) for name in refused],
        shipped_templates(profile),
        session(library),
        namespace=f"{profile.name}/",
    )
    for name, outcome in zip(refused, outcomes, strict=True):
        count = len(reviews[name]["object"]["spec"]["template"]["spec"]["replicatedJobs"])
        assert (outcome.error, outcome.violations) == ("", (_too_many(count),)), name
        assert 0 < outcome.cost <= gatekeeper.PER_CALL_LIMIT, name
    assert kept_rego_messages(profile.name, rule, reviews["reserved_update"], {})  # denied by Rego too
