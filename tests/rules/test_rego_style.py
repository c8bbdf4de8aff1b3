"""Every emitted Rego module carries METADATA that the real OPA parses and reaches the ConstraintTemplates byte for
byte. Layout, strict mode and unit tests are the real OPA's (tests/opa/); the lint is Regal's, with the project's
own rules in .regal/rules/ (tests/tools/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.cli.test_command import Group, _default_groups
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.paths import BUNDLES_DIR, POLICIES_DIR, PROFILES_DIR, PROJECT_ROOT
from kubeflow_trainer_policy.profiles import generated_profiles
from kubeflow_trainer_policy.render.rego import yaml_scalar
from kubeflow_trainer_policy.render.yaml_text import block_scalar_fits, dump, dump_all

PROFILES = [p.name for p in generated_profiles()]
TEMPLATES = sorted((PROJECT_ROOT / "bundles").glob("gatekeeper*/*/*/template.yaml"))


GOOD_MODULE = (
    "# METADATA\n# title: probe target\n# description: A module whose METADATA is valid YAML.\npackage target\n\n"
    'x := "ok"\n'
)


def _opa_check(tmp_path: Path, text: str) -> str:
    """`opa check` (annotations processed) of one module: its errors, empty when it passes."""
    module = tmp_path / "m.rego"
    module.write_text(text)
    result = run_opa(["check", "--strict", module], check=False)
    return "" if result.returncode == 0 else result.stderr


def test_the_real_opa_accepts_valid_metadata(tmp_path):
    assert _opa_check(tmp_path, GOOD_MODULE) == ""


def test_the_real_opa_rejects_a_title_with_an_unquoted_colon(tmp_path):
    """What main's v1-job-managed-by module had once: OPA's YAML parser refuses `title: a: b`."""
    bad = GOOD_MODULE.replace("title: probe target", "title: Training Operator v1 jobs: spec.runPolicy")
    error = _opa_check(tmp_path, bad)
    assert "m.rego:2" in error and "yaml: mapping values are not allowed" in error


@pytest.mark.parametrize(
    "value",
    [
        "Training Operator v1 jobs: spec.runPolicy.managedBy takes an allowed value",
        "a value # that looks like a comment",
        "- starts like a list",
        "true",
        "v2.0",
        "plain words",
        '"quoted" and \\ backslash',
    ],
)
def test_yaml_scalar_is_read_back_unchanged_by_yaml_and_by_opa(value, tmp_path):
    assert yaml.safe_load(f"title: {yaml_scalar(value)}\n") == {"title": value}
    module = GOOD_MODULE.replace("title: probe target", f"title: {yaml_scalar(value)}")
    assert _opa_check(tmp_path, module) == ""


def _block_scalars(text: str, key: str) -> list[str]:
    """The raw lines of every literal block scalar under `key:` (mapping value) or `- ` entries of `key:`."""
    lines = text.split("\n")
    blocks: list[str] = []
    for i, line in enumerate(lines):
        match = re.fullmatch(rf"( *)(?:{key}: |- )\|", line)
        if match is None or (line.lstrip().startswith("- ") and not _under(lines, i, key)):
            continue
        indent = len(match.group(1)) + 2
        body = []
        for raw in lines[i + 1 :]:
            if raw and not raw.startswith(" " * indent):
                break
            body.append(raw[indent:])
        while body and body[-1] == "":
            body.pop()
        blocks.append("\n".join(body) + "\n")
    return blocks


def _under(lines: list[str], index: int, key: str) -> bool:
    """Whether the `- ` entry at `index` belongs to the sequence of `key:`: the nearest line above it that is
    indented no deeper (block scalar lines in between are deeper, whatever they end with)."""
    depth = len(lines[index]) - len(lines[index].lstrip())
    j = index - 1
    while j >= 0 and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > depth):
        j -= 1
    while j >= 0 and lines[j].lstrip().startswith("- "):
        j -= 1
        while j >= 0 and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > depth):
            j -= 1
    return j >= 0 and lines[j].strip() == f"{key}:"


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_template_yaml_carries_the_rego_files_text_byte_for_byte(template):
    """The YAML text itself (not only its parsed value) holds each module line for line, tabs included, in
    literal block scalars; parsing it gives back exactly the files under policies/ and profiles/<profile>/."""
    profile = template.parent.parent.name
    text = template.read_text()
    source = yaml.safe_load(text)["spec"]["targets"][0]["code"][0]["source"]
    module = (POLICIES_DIR / template.parent.name / "src.rego").read_text()
    assert "\t" in module
    assert source["rego"] == module
    assert _block_scalars(text, "rego") == [module]
    libs = {_lib(profile, name) for name in _imports(module)}
    assert sorted(source["libs"]) == sorted(libs)
    assert _block_scalars(text, "libs") == source["libs"]


def _imports(module: str, seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    for name in re.findall(r"^import data\.lib\.trainer\.(\w+)$", module, flags=re.M):
        if name not in seen:
            seen.add(name)
            _imports(_lib(PROFILES[0], name), seen)
    return seen


def _lib(profile: str, name: str) -> str:
    """A lib of the profile: its own lib for `profile`, any other under policies/lib/trainer/."""
    if name == "profile":
        return (PROFILES_DIR / profile / "profile.rego").read_text()
    return (POLICIES_DIR / "lib" / "trainer" / f"{name}.rego").read_text()


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.text(alphabet=st.sampled_from(list("ab #:-|>\t\n\"'{}[]é")), max_size=40) | st.integers() | st.none(),
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["rego", "k", "x"]), children)
        ),
        max_leaves=8,
    )
)
def test_yaml_text_reads_back_exactly_what_was_dumped(value):
    assert yaml.safe_load(dump(value)) == value
    assert list(yaml.safe_load_all(dump_all([value, {"rego": value}]))) == [value, {"rego": value}]


def test_multi_line_strings_with_tabs_become_literal_block_scalars():
    text = dump({"rego": "package p\n\nx if {\n\ttrue\n}\n", "libs": ["a\n\tb", " lead\n"]})
    assert text.startswith("rego: |\n  package p\n\n  x if {\n  \ttrue\n  }\nlibs:\n- |-\n  a\n  \tb\n- |2\n   lead\n")
    assert not block_scalar_fits("only one line")
    assert not block_scalar_fits("a\n \nb\n")  # a whitespace-only line cannot be told from a blank one


def test_block_scalar_after_leading_blank_lines_keeps_the_first_texts_leading_space():
    # YAML takes a block's indentation from its first non-empty line, so that line decides the indicator.
    for value in ["\n :", "\n\n  a\nb\n", "\n x\n"]:
        assert yaml.safe_load(dump({"k": value, "s": [value]})) == {"k": value, "s": [value]}


def test_trainer_policy_test_runs_policies_with_every_profile_by_default():
    groups = [Group((POLICIES_DIR, PROFILES_DIR / p), p, f"policies + profiles/{p}") for p in sorted(PROFILES)]
    assert _default_groups() == [*groups, Group((BUNDLES_DIR,), None, "bundles")]
    one = Group((POLICIES_DIR, PROFILES_DIR / "v2.3"), "v2.3", "policies + profiles/v2.3")
    assert _default_groups(["v2.3"]) == [
        one,
        Group((BUNDLES_DIR / "gatekeeper/v2.3",), None, "bundles/gatekeeper/v2.3"),
        Group((BUNDLES_DIR / "gatekeeper-external-data/v2.3",), None, "bundles/gatekeeper-external-data/v2.3"),
    ]
    with pytest.raises(InputError, match=r"--profile: unknown profile 'v9' \(known: v2\.0, v2\.1"):
        _default_groups(["v9"])
