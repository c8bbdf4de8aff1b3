"""A rule is one folder: adding a throwaway rule's folder (src.rego, src_test.rego, cases.py) to a copy of policies/
is all it takes to get its bundle, suite, samples and docs, and its unit tests and cases then pass on the real
engine in every profile; the loader refuses folders that break the layout, naming the file and the field."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from kubeflow_trainer_policy.catalog import CatalogError, load_catalog, load_rules, rule_folders
from kubeflow_trainer_policy.catalog.model import kind_for
from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy.paths import POLICIES_DIR, PROFILES_DIR
from kubeflow_trainer_policy.profiles import DEFAULT_PROFILE, generated_profiles, get_profile
from kubeflow_trainer_policy.render.gatekeeper import constraint_template
from kubeflow_trainer_policy.render.rego_tests import case_tests_path, render_rule_tests
from kubeflow_trainer_policy.render.tree import render_tree, write_tree
from kubeflow_trainer_policy.testing.rego_tests import RegoFile, run_rego_tests

RULE_ID = "trainjob-example-label"

SOURCE = """\
# METADATA
# title: A throwaway rule
# description: Denies TrainJobs carrying the profile's forbidden label.
# custom:
#   id: trainjob-example-label
#   version: 0.0.1
#   specSection: none
#   rationale: Shows that a rule is one folder.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
package trainertrainjobexamplelabel

import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.violations

label := sprintf("example.com/forbidden-%s", [profile.name])

# METADATA
# title: forbidden label
# description: The label is set.
violation contains v if {
\treview.applies_to({"CREATE", "UPDATE"})
\treview.get(review.new_object, ["metadata", "labels", label], null) != null
\tv := violations.make("metadata.labels", "Forbidden", sprintf("%s is not allowed", [label]))
}
"""

UNIT_TESTS = """\
package trainertrainjobexamplelabel

import data.lib.trainer.profile

test_the_label_names_the_profile if {
\tendswith(label, profile.name)
}
"""

CASES = """
from kubeflow_trainer_policy.catalog.model import Case, Expected


def trainjob(labels):
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "team-a", "labels": labels},
        "spec": {},
    }


def cases(p):
    label = "example.com/forbidden-" + p.name
    return [
        Case("unlabelled_allowed", "No label.", trainjob({})),
        Case(
            "labelled_denied",
            "The profile's forbidden label.",
            trainjob({label: "x"}),
            expected=(Expected("metadata.labels", "Forbidden", label + " is not allowed"),),
        ),
    ]
"""


@pytest.fixture
def policies(tmp_path: Path) -> Path:
    """A copy of policies/ with the throwaway rule's folder added: only that folder is written by hand."""
    root = tmp_path / "policies"
    shutil.copytree(POLICIES_DIR, root, ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / RULE_ID
    folder.mkdir()
    (folder / "src.rego").write_text(SOURCE)
    (folder / "src_test.rego").write_text(UNIT_TESTS)
    (folder / "cases.py").write_text(textwrap.dedent(CASES))
    return root


def test_names_derive_from_the_id():
    assert kind_for("trainjob-ml-policy") == "TrainerTrainJobMLPolicy"
    assert kind_for("v1-job-managed-by") == "TrainerV1JobManagedBy"
    for rule in load_catalog():
        assert rule.folder == POLICIES_DIR / rule.id
        assert rule.template_name == rule.package == rule.kind.lower()
    assert [f.name for f in rule_folders(POLICIES_DIR)] == [r.id for r in load_catalog()]


def test_a_new_rule_is_one_folder(policies: Path, tmp_path: Path):
    rules = load_rules(policies)
    (rule,) = [r for r in rules if r.id == RULE_ID]
    assert (rule.kind, rule.folder, rule.version) == ("TrainerTrainJobExampleLabel", policies / RULE_ID, "0.0.1")
    assert rule.source == SOURCE and rule.operations == ("CREATE", "UPDATE")

    profiles = generated_profiles()
    out = tmp_path / "out"
    write_tree(render_tree(profiles, get_profile(DEFAULT_PROFILE), rules=rules), out)
    for profile in profiles:
        bundle = out / "bundles" / "gatekeeper" / profile.name
        template = yaml.safe_load((bundle / RULE_ID / "template.yaml").read_text())
        assert template["spec"]["crd"]["spec"]["names"]["kind"] == "TrainerTrainJobExampleLabel"
        source = template["spec"]["targets"][0]["code"][0]["source"]
        assert source["rego"] == SOURCE, "the template carries the folder's Rego byte for byte"
        assert f'name := "{profile.name}"' in next(
            lib for lib in source["libs"] if "package lib.trainer.profile" in lib
        )
        assert f"../{RULE_ID}" in yaml.safe_load((bundle / "templates" / "kustomization.yaml").read_text())["resources"]
        constraints = yaml.safe_load((bundle / "constraints" / "kustomization.yaml").read_text())["resources"]
        assert f"../{RULE_ID}/constraint" in constraints
        # Its unit tests and its cases, as Rego tests, pass on the real engine next to every other rule's.
        cases = RegoFile(f"{RULE_ID}/{case_tests_path(rule)}", render_rule_tests(rule, profile))
        outcomes = run_rego_tests([policies, PROFILES_DIR / profile.name], extra=[cases])
        mine = [o for o in outcomes if ".trainertrainjobexamplelabel." in o.name]
        assert len(mine) == 3 and all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]
    assert (out / "docs" / "policies" / f"{RULE_ID}.md").is_file()
    assert RULE_ID in (out / "README.md").read_text()
    # Its gator suite passes too.
    assert main(["test", "--quiet", str(out / "bundles" / "gatekeeper" / "v2.0" / RULE_ID)]) == 0


def test_a_folder_named_otherwise_is_refused(policies: Path):
    (policies / RULE_ID).rename(policies / "example")
    with pytest.raises(CatalogError, match=re.escape("rule 'trainjob-example-label' belongs in a folder named")):
        load_rules(policies)


def test_a_folder_without_its_cases_is_refused(policies: Path):
    (policies / RULE_ID / "cases.py").unlink()
    with pytest.raises(CatalogError, match=re.escape(f"{policies / RULE_ID}: no cases.py")):
        load_rules(policies)


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ("#   version: 0.0.1\n", "", "METADATA custom.version: required"),
        ("#   version: 0.0.1\n", "#   version: one\n", "METADATA custom.version: must be a semantic version"),
        ("#   operations: [CREATE, UPDATE]\n", "#   operations: [CREATE, PATCH]\n", "'PATCH' is not one of"),
        ("#       kinds: [TrainJob]\n", "", "METADATA custom.match[0].kinds: must be a non-empty list of strings"),
        ("package trainertrainjobexamplelabel\n", "package other\n", "package other must be the template name"),
    ],
)
def test_metadata_that_does_not_fit_is_refused_naming_the_file_and_field(policies: Path, old, new, error):
    path = policies / RULE_ID / "src.rego"
    path.write_text(path.read_text().replace(old, new))
    (policies / RULE_ID / "src_test.rego").unlink()
    with pytest.raises(CatalogError, match=re.escape(error)) as raised:
        load_rules(policies)
    assert str(raised.value).startswith(str(path))


def test_another_engine_s_source_beside_src_rego_is_the_templates_next_code_entry(policies: Path):
    """The seam for engines besides Rego: a rule folder's cel.yaml is a K8sNativeValidation entry after the Rego,
    its `variables.settings` the profile's data (here only the operations the METADATA gives), generateVAP written
    out: false, since CEL declared for 1.30 is more than the oldest API server Gatekeeper generates policies on (1.29)
    accepts. CEL that the oldest supported Gatekeeper's libraries (1.30) cannot compile stays out of the template."""
    cel = {"validations": [{"expression": "!has(object.metadata.labels)", "message": "no labels"}]}
    (policies / RULE_ID / "cel.yaml").write_text(yaml.safe_dump(cel))
    (rule,) = [r for r in load_rules(policies) if r.id == RULE_ID]
    rego, other = constraint_template(rule, get_profile(DEFAULT_PROFILE))["spec"]["targets"][0]["code"]
    assert rego["engine"] == "Rego" and rego["source"]["rego"] == SOURCE
    assert other["engine"] == "K8sNativeValidation"
    assert other["source"]["validations"] == cel["validations"] and other["source"]["generateVAP"] is False
    assert other["source"]["variables"] == [
        {"name": "settings", "expression": '{"operations": dyn(["CREATE", "UPDATE"])}'}
    ]
    (policies / RULE_ID / "cel.yaml").write_text(yaml.safe_dump({**cel, "compatibility": "1.32"}))
    (newer,) = [r for r in load_rules(policies) if r.id == RULE_ID]
    assert [
        c["engine"] for c in constraint_template(newer, get_profile(DEFAULT_PROFILE))["spec"]["targets"][0]["code"]
    ] == ["Rego"]
    (without,) = [r for r in load_catalog() if r.id == "trainjob-ml-policy"]
    assert len(constraint_template(without, get_profile(DEFAULT_PROFILE))["spec"]["targets"][0]["code"]) == 1
