"""Templates Gatekeeper would reject are rejected here too, with the file and field named."""

from __future__ import annotations

import re

import pytest
import yaml

from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from tests.gatekeeper.helpers import FIXTURES


def base_template() -> dict:
    return next(yaml.safe_load_all((FIXTURES / "templates.yaml").read_text()))


def write(tmp_path, body) -> str:
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump(body))
    return str(path)


def mutate(tmp_path, change) -> str:
    body = base_template()
    change(body)
    return write(tmp_path, body)


def source(body) -> dict:
    return body["spec"]["targets"][0]["code"][0]["source"]


CASES = {
    "v0 version": (lambda b: source(b).update(version="v0"), r"code\[0\]\.source\.version: must be \"v1\""),
    "legacy rego field": (
        lambda b: b["spec"]["targets"][0].update(rego="package x"),
        r"spec\.targets\[0\]\.rego: legacy Rego v0",
    ),
    "name not lower kind": (lambda b: b["metadata"].update(name="other"), r"metadata\.name: must be the lower-cased"),
    "forbidden data ref": (
        lambda b: source(b).update(rego=source(b)["rego"] + "\nx := data.kubernetes.pods\n"),
        r"invalid data reference: 'data\.kubernetes\.pods' is not allowed",
    ),
    "lib outside lib": (
        lambda b: source(b).update(libs=["package helpers\nf := 1\n"]),
        r"lib package 'helpers' must be under `lib\.`",
    ),
    "no violation rule": (
        lambda b: source(b).update(rego="package k8srequiredlabel\ndeny contains 1 if true\n"),
        r"defines no `violation` rule",
    ),
    "parse error": (lambda b: source(b).update(rego="package k8srequiredlabel\nviolation contains"), "does not parse"),
    "no target": (lambda b: b["spec"].update(targets=[]), r"spec\.targets: must hold exactly one target"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_template_is_rejected_with_file_and_field(tmp_path, case):
    change, message = CASES[case]
    path = mutate(tmp_path, change)
    with pytest.raises(InputError) as info:
        load_policy_set([path])
    assert str(info.value).startswith(path)
    assert "\n" not in str(info.value).strip()
    assert re.search(message, str(info.value)), str(info.value)


def test_constraint_of_unknown_kind_is_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: Nope\nmetadata: {name: x}\n")
    with pytest.raises(InputError, match=r"c\.yaml: kind: no ConstraintTemplate defines kind Nope"):
        load_policy_set([path])


def test_bad_enforcement_action_is_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sRequiredLabel\nmetadata: {name: x}\n"
        "spec: {enforcementAction: block}\n"
    )
    with pytest.raises(InputError, match=r"spec\.enforcementAction: must be one of deny, warn, dryrun"):
        load_policy_set([FIXTURES / "templates.yaml", path])
