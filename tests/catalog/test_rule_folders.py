"""A rule is one folder: adding a throwaway rule's folder is all it takes to get its Rego, unit tests, bundle,
suite, samples and docs, which then pass on the real engine; the loader refuses folders that break the layout."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from kubeflow_trainer_policy.catalog import RULES_DIR, CatalogError, load_catalog, load_rules
from kubeflow_trainer_policy.catalog.model import folder_for, kind_for
from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy.profiles import DEFAULT_PROFILE, generated_profiles, get_profile
from kubeflow_trainer_policy.render.tree import render_tree, write_tree

RULE_ID = "trainjob-example-label"

RULE_MODULE = """
from kubeflow_trainer_policy.catalog.model import Case, DataNeeds, Expected, MatchKind, Rule
from kubeflow_trainer_policy.profiles import PROFILES

SETTINGS = {name: {"label": "example.com/forbidden-" + name} for name in PROFILES}


def trainjob(labels):
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "team-a", "labels": labels},
        "spec": {},
    }


def cases(p):
    label = SETTINGS[p.name]["label"]
    return [
        Case("unlabelled_allowed", "No label.", trainjob({})),
        Case(
            "labelled_denied",
            "The profile's forbidden label.",
            trainjob({label: "x"}),
            expected=(Expected("metadata.labels", "Forbidden", label + " is not allowed"),),
        ),
    ]


RULE = Rule(
    id="trainjob-example-label",
    title="A throwaway rule",
    description="Denies TrainJobs carrying the profile's forbidden label.",
    rationale="Shows that a rule is one folder.",
    spec_section="none",
    version="0.0.1",
    match=(MatchKind(("trainer.kubeflow.org",), ("TrainJob",)),),
    operations=("CREATE", "UPDATE"),
    parameters=(),
    data=DataNeeds(),
    libs=("violations", "review"),
    cases=cases,
    settings=SETTINGS,
)
"""

TEMPLATE = """\
# METADATA
# title: {{ rule.title | yaml_scalar }}
# description: >-
{{ rule.description | comment(3) }}
package {{ rule.package }}

import data.lib.trainer.review
import data.lib.trainer.violations

label := {{ settings.label | tojson }}

# METADATA
# title: forbidden label
# description: The label is set.
violation contains v if {
\treview.applies_to({"CREATE", "UPDATE"})
\treview.get(review.new_object, ["metadata", "labels", label], null) != null
\tv := violations.make("metadata.labels", "Forbidden", sprintf("%s is not allowed", [label]))
}
"""


def _write_rule(rules_dir: Path, name: str = folder_for(RULE_ID), module: str = RULE_MODULE) -> Path:
    folder = rules_dir / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(module))
    (folder / "template.rego.j2").write_text(TEMPLATE)
    return folder


def test_names_derive_from_the_id():
    assert kind_for("trainjob-ml-policy") == "TrainerTrainJobMLPolicy"
    assert kind_for("v1-job-managed-by") == "TrainerV1JobManagedBy"
    for rule in load_catalog():
        assert rule.folder == RULES_DIR / folder_for(rule.id)
        assert rule.template_name == rule.package == rule.kind.lower()


def test_every_rule_setting_covers_every_profile():
    for rule in load_catalog():
        if rule.settings:
            assert set(rule.settings) >= {p.name for p in generated_profiles()}, rule.id


def test_a_new_rule_is_one_folder(tmp_path: Path):
    """Only the folder is written by hand; everything else is what `trainer-policy generate` renders."""
    folder = _write_rule(tmp_path / "rules")
    (rule,) = load_rules(tmp_path / "rules")
    assert (rule.id, rule.kind, rule.folder) == (RULE_ID, "TrainerTrainJobExampleLabel", folder)

    profiles = generated_profiles()
    tree = render_tree(profiles, get_profile(DEFAULT_PROFILE), rules=[*load_catalog(), rule])
    out = tmp_path / "out"
    write_tree(tree, out)
    for profile in profiles:
        rego = (out / "policies" / profile.name / RULE_ID / "src.rego").read_text()
        assert f'label := "example.com/forbidden-{profile.name}"' in rego
        assert (out / "policies" / profile.name / RULE_ID / "src_test.rego").is_file()
        bundle = out / "bundles" / "gatekeeper" / profile.name
        template = yaml.safe_load((bundle / RULE_ID / "template.yaml").read_text())
        assert template["spec"]["crd"]["spec"]["names"]["kind"] == "TrainerTrainJobExampleLabel"
        assert f"../{RULE_ID}" in yaml.safe_load((bundle / "templates" / "kustomization.yaml").read_text())["resources"]
        constraints = yaml.safe_load((bundle / "constraints" / "kustomization.yaml").read_text())["resources"]
        assert f"../{RULE_ID}/constraint" in constraints
    assert (out / "docs" / "policies" / f"{RULE_ID}.md").is_file()
    assert RULE_ID in (out / "README.md").read_text()

    # Its generated unit tests and its gator suite pass on the real engine, next to every other rule.
    v20 = out / "policies" / "v2.0"
    assert main(["test", "--quiet", str(v20)]) == 0
    assert main(["test", "--quiet", str(out / "bundles" / "gatekeeper" / "v2.0" / RULE_ID)]) == 0


def test_a_folder_named_otherwise_is_refused(tmp_path: Path):
    _write_rule(tmp_path / "rules", name="example")
    with pytest.raises(CatalogError, match="belongs in a folder named trainjob_example_label"):
        load_rules(tmp_path / "rules")


def test_a_folder_without_its_template_is_refused(tmp_path: Path):
    folder = _write_rule(tmp_path / "rules")
    (folder / "template.rego.j2").unlink()
    with pytest.raises(CatalogError, match=re.escape("no template.rego.j2")):
        load_rules(tmp_path / "rules")


def test_settings_missing_a_profile_are_refused(tmp_path: Path):
    module = RULE_MODULE.replace("for name in PROFILES}", 'for name in PROFILES if name != "v2.2"}')
    _write_rule(tmp_path / "rules", module=module)
    with pytest.raises(CatalogError, match=re.escape("no entry for v2.2")):
        load_rules(tmp_path / "rules")
