"""The Gatekeeper runner against hand-built templates: decisions, inventory, enforcementAction, errors."""

from __future__ import annotations

import pytest
import yaml

from kubeflow_trainer_policy.errors import InputError, TemplateError
from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet, add_constraint, load_policy_set, with_parameters
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from tests.gatekeeper.helpers import FIXTURES, request, trainjob

ALL_LABELS = {"team": "a", "cost-center": "c1", "owner": "me"}


@pytest.fixture(scope="module")
def runner():
    policy_set = load_policy_set([FIXTURES / "templates.yaml", FIXTURES / "constraints.yaml"])
    with GatekeeperRunner(policy_set) as r:
        yield r


def test_create_with_all_labels_is_allowed(runner):
    result = runner.review(request("CREATE", trainjob(labels=ALL_LABELS)))
    assert result.allowed
    assert result.violations == []


def test_create_missing_label_is_denied_with_the_lib_helpers_shape(runner):
    result = runner.review(request("CREATE", trainjob(labels={"cost-center": "c", "owner": "o"})))
    assert not result.allowed
    [violation] = result.violations
    assert violation.constraint == "team-label"
    assert violation.template == "k8srequiredlabel"
    assert violation.enforcement_action == "deny"
    assert violation.msg == "metadata.labels: Required: label team is required"
    assert violation.details == {"field": "metadata.labels", "type": "Required", "detail": "label team is required"}


def test_warn_and_dryrun_violations_are_reported_but_allow(runner):
    result = runner.review(request("CREATE", trainjob(labels={"team": "a"})))
    assert result.allowed
    actions = {v.constraint: v.enforcement_action for v in result.violations}
    assert actions == {"cost-center-warn": "warn", "owner-dryrun": "dryrun"}


def test_update_sees_old_object(runner):
    old = trainjob(labels=ALL_LABELS, owner="alice")
    new = trainjob(labels=ALL_LABELS, owner="bob")
    result = runner.review(request("UPDATE", new, old))
    assert [v.msg for v in result.violations] == ["owner changed from alice to bob"]
    assert not result.allowed
    assert runner.review(request("UPDATE", old, old)).allowed


def test_namespace_glob_and_exclusion(runner):
    no_team = {"cost-center": "c", "owner": "o"}
    assert not runner.review(request("CREATE", trainjob(namespace="team-b", labels=no_team))).allowed
    assert runner.review(request("CREATE", trainjob(namespace="research", labels=no_team))).allowed
    assert runner.review(request("CREATE", trainjob(namespace="team-exempt", labels=no_team))).allowed


def test_other_kinds_do_not_match(runner):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
    result = runner.review(request("CREATE", pod))
    assert result.allowed and result.violations == []


def test_delete_matches_on_old_object(runner):
    result = runner.review(request("DELETE", None, trainjob(labels={})))
    assert {v.constraint for v in result.violations} == {"team-label", "cost-center-warn", "owner-dryrun"}


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "team-a"}}
CLASS = {"apiVersion": "example.com/v1", "kind": "Class", "metadata": {"name": "gold"}}


def _inventory_refs() -> tuple[PolicySet, dict]:
    """The fixtures' K8sInventoryRef template with one Constraint, and a TrainJob naming CONFIGMAP and CLASS."""
    policy_set = load_policy_set([FIXTURES / "templates.yaml"])
    add_constraint(policy_set, Constraint("K8sInventoryRef", "refs", {}, {}, "deny", "test"))
    return policy_set, trainjob(configRef="cfg", className="gold")


def test_inventory_lookups_namespaced_and_cluster():
    policy_set, job = _inventory_refs()
    with GatekeeperRunner(policy_set) as runner:
        assert sorted(v.msg for v in runner.review(request("CREATE", job)).violations) == [
            "class gold not found",
            "configmap team-a/cfg not found",
        ]
        runner.set_objects([CONFIGMAP, CLASS])
        assert runner.review(request("CREATE", job)).violations == []
        runner.set_objects([{**CONFIGMAP, "metadata": {"name": "cfg", "namespace": "team-b"}}, CLASS])
        assert [v.msg for v in runner.review(request("CREATE", job)).violations] == ["configmap team-a/cfg not found"]


def test_inventory_given_up_front_is_replaced_by_later_objects():
    """The first inventory goes into the engine's store, which can only be merged into: later objects must
    still replace it whole (here a ConfigMap disappears), and the stored one serves again when it comes back."""
    policy_set, job = _inventory_refs()
    with GatekeeperRunner(policy_set, objects=[CONFIGMAP, CLASS]) as runner:
        assert runner.review(request("CREATE", job)).violations == []
        runner.set_objects([CLASS])
        assert [v.msg for v in runner.review(request("CREATE", job)).violations] == ["configmap team-a/cfg not found"]
        runner.set_objects([])
        assert len(runner.review(request("CREATE", job)).violations) == 2
        runner.set_objects([CLASS, CONFIGMAP])
        assert runner.review(request("CREATE", job)).violations == []


def test_inventory_values_that_python_calls_equal_are_not_confused(tmp_path):
    """Python's == says True == 1; OPA does not. An inventory that differs from the stored one only so must not
    be answered from the store."""
    rego = (
        "package k8sflag\n\n"
        'violation contains {"msg": "flag is true"} if data.inventory.cluster["example.com/v1"].Class.gold.spec.flag '
        "== true\n"
    )
    (tmp_path / "t.yaml").write_text(_template("k8sflag", rego))
    policy_set = load_policy_set([tmp_path / "t.yaml"])

    add_constraint(policy_set, Constraint("K8sflag", "flag", {}, {}, "deny", "test"))

    def gold(flag: object) -> dict:
        return {"apiVersion": "example.com/v1", "kind": "Class", "metadata": {"name": "gold"}, "spec": {"flag": flag}}

    with GatekeeperRunner(policy_set, objects=[gold(1)]) as runner:
        assert runner.review(request("CREATE", trainjob())).violations == []
        runner.set_objects([gold(True)])
        assert [v.msg for v in runner.review(request("CREATE", trainjob())).violations] == ["flag is true"]
        runner.set_objects([gold(1)])
        assert runner.review(request("CREATE", trainjob())).violations == []


def test_parameters_file_overrides_and_is_validated():
    policy_set = load_policy_set([FIXTURES / "templates.yaml", FIXTURES / "constraints.yaml"])
    updated = with_parameters(policy_set, {"team-label": {"label": "squad"}}, "params.yaml")
    with GatekeeperRunner(updated) as runner:
        result = runner.review(request("CREATE", trainjob(labels=ALL_LABELS)))
    assert [v.msg for v in result.violations] == ["metadata.labels: Required: label squad is required"]
    with pytest.raises(InputError, match=r"params.yaml: spec.parameters.label: 5 is not of type 'string'"):
        with_parameters(policy_set, {"team-label": {"label": 5}}, "params.yaml")
    with pytest.raises(InputError, match="no constraint named 'nope'"):
        with_parameters(policy_set, {"nope": {}}, "params.yaml")


def test_template_that_fails_to_compile_names_the_template(tmp_path):
    broken = (
        (FIXTURES / "templates.yaml")
        .read_text()
        .split("---")[1]
        .replace("old != new", "old != undefined_function(new)")
    )
    (tmp_path / "broken.yaml").write_text(broken)
    with pytest.raises(TemplateError, match=r"template k8simmutablename: Rego does not compile: .*undefined function"):
        GatekeeperRunner(load_policy_set([tmp_path / "broken.yaml"]))


def test_evaluation_error_is_an_error_never_allowed(tmp_path):
    """A rule with two values is an evaluation error in Gatekeeper too (a failing builtin is not: it is undefined
    there, see test_lenient_builtins.py)."""
    body = yaml.safe_load((FIXTURES / "templates.yaml").read_text().split("---")[1])
    source = body["spec"]["targets"][0]["code"][0]["source"]
    source["rego"] = source["rego"].replace(
        'msg := sprintf("owner changed from %v to %v", [old, new])', 'msg := sprintf("%v", [owner_of])'
    ) + (
        'owner_of := object.get(input.review.object, ["spec", "owner"], null)\n\n'
        'owner_of := object.get(input.review.oldObject, ["spec", "owner"], null)\n'
    )
    template = yaml.safe_dump(body)
    (tmp_path / "t.yaml").write_text(template)
    policy_set = load_policy_set([tmp_path / "t.yaml"])

    add_constraint(policy_set, Constraint("K8sImmutableName", "c", {}, {}, "deny", "test"))
    with GatekeeperRunner(policy_set) as runner:
        result = runner.review(request("UPDATE", trainjob(owner="x-not-a-number"), trainjob(owner="a")))
    assert not result.allowed
    assert result.errors and result.errors[0].startswith("template k8simmutablename: evaluation failed:")


def test_audit_review_has_empty_operation_and_null_old_object(runner):
    """Gatekeeper's audit review keeps every always-serialised key, with empty values (recorded corpus)."""
    from kubeflow_trainer_policy.gatekeeper.review import audit_request

    job = trainjob(labels={"team": "a"}, owner="alice")
    review = audit_request(job).as_input()
    assert review == {
        "uid": "",
        "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"},
        "resource": {"group": "", "version": "", "resource": ""},
        "name": "job1",
        "namespace": "team-a",
        "operation": "",
        "userInfo": {},
        "object": job,
        "oldObject": None,
        "options": None,
    }
    result = runner.review(audit_request(job))
    assert result.errors == []
    assert {v.constraint for v in result.violations} == {"cost-center-warn", "owner-dryrun"}


def test_all_templates_share_one_engine_and_one_query(runner):
    assert runner.combined is not None
    result = runner.review(request("CREATE", trainjob(labels={})))
    assert {v.constraint for v in result.violations} == {"team-label", "cost-center-warn", "owner-dryrun"}


def test_templates_that_cannot_share_an_engine_are_evaluated_apart(tmp_path):
    text = (FIXTURES / "templates.yaml").read_text().split("---")[1]
    twin = text.replace("name: k8simmutablename", "name: k8simmutabletwin").replace(
        "kind: K8sImmutableName", "kind: K8sImmutableTwin"
    )
    (tmp_path / "t.yaml").write_text(text + "\n---\n" + twin)
    policy_set = load_policy_set([tmp_path / "t.yaml"])

    add_constraint(policy_set, Constraint("K8sImmutableName", "a", {}, {}, "deny", "test"))
    add_constraint(policy_set, Constraint("K8sImmutableTwin", "b", {}, {}, "warn", "test"))
    with GatekeeperRunner(policy_set) as runner:
        assert runner.combined is None, "both templates use package k8simmutablename"
        result = runner.review(request("UPDATE", trainjob(owner="x"), trainjob(owner="y")))
    assert [(v.constraint, v.msg) for v in result.violations] == [
        ("a", "owner changed from y to x"),
        ("b", "owner changed from y to x"),
    ]


def _template(name: str, rego: str, libs: tuple[str, ...] = ()) -> str:
    """A ConstraintTemplate (YAML) of kind name.capitalize() with this Rego v1 source and libs."""
    source: dict[str, object] = {"version": "v1", "rego": rego}
    if libs:
        source["libs"] = list(libs)
    return yaml.safe_dump(
        {
            "apiVersion": "templates.gatekeeper.sh/v1",
            "kind": "ConstraintTemplate",
            "metadata": {"name": name},
            "spec": {
                "crd": {"spec": {"names": {"kind": name.capitalize()}}},
                "targets": [{"target": "admission.k8s.gatekeeper.sh", "code": [{"engine": "Rego", "source": source}]}],
            },
        }
    )


def _template_with_lib(name: str, lib: str) -> str:
    """A template whose violation reads data.lib.shared.flag from its one lib."""
    rego = f'package {name}\n\nimport data.lib.shared\n\nviolation contains {{"msg": "{name}"}} if shared.flag\n'
    return _template(name, rego, (lib,))


def test_templates_whose_libs_do_not_compile_together_are_evaluated_apart(tmp_path):
    """Each template compiles alone; together their libs declare `flag` as a value and as a set, which OPA
    refuses. The first review finds that out, is evaluated template by template, and later reviews no longer
    try the shared engine."""
    one = _template_with_lib("k8sone", "package lib.shared\n\nflag := true\n")
    two = _template_with_lib("k8stwo", "package lib.shared\n\nflag contains 1\n")
    (tmp_path / "t.yaml").write_text(one + "---\n" + two)
    policy_set = load_policy_set([tmp_path / "t.yaml"])

    add_constraint(policy_set, Constraint("K8sone", "a", {}, {}, "deny", "test"))
    add_constraint(policy_set, Constraint("K8stwo", "b", {}, {}, "deny", "test"))
    with GatekeeperRunner(policy_set) as runner:
        assert runner.combined is not None  # nothing is compiled up front
        for _ in range(2):
            result = runner.review(request("CREATE", trainjob()))
            assert result.errors == []
            assert sorted((v.constraint, v.msg) for v in result.violations) == [("a", "k8sone"), ("b", "k8stwo")]
            assert runner.combined is None
