"""Every emitted Rego module is laid out as `opa fmt` prints it, carries METADATA that the real OPA parses,
and reaches the ConstraintTemplates byte for byte; the checks themselves catch what they claim to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.cli.test_command import _default_paths
from kubeflow_trainer_policy.lint.__main__ import lint
from kubeflow_trainer_policy.lint.modules import LoadGroup, Module, annotation_errors, load_groups
from kubeflow_trainer_policy.lint.rego_style import check_module
from kubeflow_trainer_policy.paths import BUNDLES_DIR, POLICIES_DIR, PROJECT_ROOT
from kubeflow_trainer_policy.profiles import generated_profiles
from kubeflow_trainer_policy.render.rego import yaml_scalar
from kubeflow_trainer_policy.render.yaml_text import block_scalar_fits, dump, dump_all

PROFILES = [p.name for p in generated_profiles()]
TEMPLATES = sorted((PROJECT_ROOT / "bundles" / "gatekeeper").rglob("template.yaml"))


def test_every_emitted_module_passes_the_rego_lint():
    """Layout, data references and METADATA (loaded by the real OPA with annotation processing on)."""
    count, problems = lint(PROJECT_ROOT)
    assert problems == []
    policy_files = list((PROJECT_ROOT / "policies").rglob("*.rego"))
    assert count >= len(policy_files) + len(TEMPLATES)


def test_load_groups_cover_every_policy_file_and_every_template():
    groups = load_groups(PROJECT_ROOT)
    paths = {m.path for g in groups for m in g.modules}
    for path in (PROJECT_ROOT / "policies").rglob("*.rego"):
        assert path.relative_to(PROJECT_ROOT).as_posix() in paths
    for template in TEMPLATES:
        rel = template.relative_to(PROJECT_ROOT).as_posix()
        assert f"{rel}#rego" in paths and f"{rel}#libs[0]" in paths


GOOD_MODULE = (
    "# METADATA\n# title: probe target\n# description: A module whose METADATA is valid YAML.\npackage target\n\n"
    'x := "ok"\n'
)


def test_the_annotation_probe_accepts_valid_metadata():
    group = LoadGroup("good", (Module("good.rego", GOOD_MODULE, entry=False, test=False),))
    assert annotation_errors(group) == []


def test_the_annotation_probe_rejects_a_title_with_an_unquoted_colon():
    """What main's v1-job-managed-by module had: OPA's YAML parser refuses `title: a: b`."""
    bad = GOOD_MODULE.replace("title: probe target", "title: Training Operator v1 jobs: spec.runPolicy")
    (error,) = annotation_errors(LoadGroup("bad", (Module("bad.rego", bad, entry=False, test=False),)))
    assert "bad.rego:2" in error and "yaml: mapping values are not allowed" in error


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
def test_yaml_scalar_is_read_back_unchanged_by_yaml_and_by_opa(value):
    assert yaml.safe_load(f"title: {yaml_scalar(value)}\n") == {"title": value}
    module = GOOD_MODULE.replace("title: probe target", f"title: {yaml_scalar(value)}")
    assert annotation_errors(LoadGroup("v", (Module("v.rego", module, entry=False, test=False),))) == []


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
    literal block scalars; parsing it gives back exactly the files under policies/<profile>/."""
    profile = template.parent.parent.name
    text = template.read_text()
    source = yaml.safe_load(text)["spec"]["targets"][0]["code"][0]["source"]
    policies = PROJECT_ROOT / "policies" / profile
    module = (policies / template.parent.name / "src.rego").read_text()
    assert "\t" in module
    assert source["rego"] == module
    assert _block_scalars(text, "rego") == [module]
    libs = {(policies / "lib" / "trainer" / f"{name}.rego").read_text() for name in _imports(module)}
    assert sorted(source["libs"]) == sorted(libs)
    assert _block_scalars(text, "libs") == source["libs"]


def _imports(module: str, seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    for name in re.findall(r"^import data\.lib\.trainer\.(\w+)$", module, flags=re.M):
        if name not in seen:
            seen.add(name)
            lib = (POLICIES_DIR / PROFILES[0] / "lib" / "trainer" / f"{name}.rego").read_text()
            _imports(lib, seen)
    return seen


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


# --- the style checks catch what they claim to --------------------------------------------------------------

FORMATTED = """# METADATA
# title: t
# description: d
package p

import data.lib.trainer.review
import data.lib.trainer.violations

x := {
\t"a": 1,
\t"b": [
\t\t1,
\t],
}

y if x.a == 1
z if x.a == 1

# METADATA
# title: v
# description: d
violation contains v if {
\tsome i in [1]
\tv := violations.make(
\t\t"f",
\t\tsprintf("%d", [i]),
\t\t"d",
\t)
}

test_t if {
\tresult := y
\t\twith input as {
\t\t\t"a": [],
\t\t}
\t\twith data.inventory as {}
\tresult
}

names := [n |
\tsome n in ["a"]
]
"""


def test_a_formatted_module_passes():
    assert check_module("ok.rego", FORMATTED, entry=True) == []


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (FORMATTED.replace('\t"a": 1,', '    "a": 1,'), "indentation must be tabs"),
        (FORMATTED.replace('\t"a": 1,', '\t\t"a": 1,'), "indents this line by 1 tabs"),
        (FORMATTED.replace('\t\t\t"a": [],', '\t\t"a": [],'), "indents this line by 3 tabs"),
        (FORMATTED.replace("\t\t1,\n", "\t\t1\n"), "needs a comma after its last entry"),
        (FORMATTED.replace('\t\t"d",\n\t)', '\t\t"d"\n\t)'), "needs a comma after its last entry"),
        (FORMATTED.replace("}\n\ny if", "}\ny if"), "a blank line must separate this rule"),
        (FORMATTED.replace("y if x.a == 1", "y if x.a == 1 "), "trailing whitespace"),
        (FORMATTED.replace("z if x.a == 1\n", "z if x.a == 1\n\n"), "two blank lines in a row"),
        (FORMATTED.replace("violation contains v if {\n", "violation contains v if {\n\n"), "after an opening"),
        (FORMATTED.replace('sprintf("%d", [i])', 'sprintf("%d",[i])'), "one space after a comma"),
        (FORMATTED.replace('{\n\t"a": 1,', '{ \n\t"a": 1,'), "trailing whitespace"),
        (FORMATTED.replace("some i in [1]", "some i in [ 1 ]"), "no space inside brackets"),
        (
            FORMATTED.replace(
                "review\nimport data.lib.trainer.violations", "violations\nimport data.lib.trainer.review"
            ),
            "sorted",
        ),
        (FORMATTED.replace("# METADATA\n# title: v\n# description: d\n", ""), "every violation rule needs a METADATA"),
        (FORMATTED.replace("# METADATA\n# title: t\n# description: d\n", ""), "the package needs a METADATA"),
        (FORMATTED + "\n", "exactly one newline"),
    ],
)
def test_the_style_check_reports(broken, message):
    problems = check_module("broken.rego", broken, entry=True)
    assert any(message in str(p) for p in problems), problems


def test_strings_and_comments_do_not_count_as_code():
    text = FORMATTED.replace('"f",', '"f { [ ,x",  # a comment ( with brackets')
    assert check_module("ok.rego", text, entry=True) == []


def test_trainer_policy_test_runs_every_profile_by_default():
    assert _default_paths() == [*(POLICIES_DIR / p for p in sorted(PROFILES)), BUNDLES_DIR]
    assert all((path / "lib" / "trainer" / "review_test.rego").is_file() for path in _default_paths()[:-1])


def test_lint_command_reports_and_fails_on_a_broken_tree(tmp_path: Path, capsys):
    from kubeflow_trainer_policy.lint.__main__ import main

    module = tmp_path / "policies" / "v9" / "r" / "src.rego"
    module.parent.mkdir(parents=True)
    module.write_text("package p\n\nx := data.kubernetes.pods\n")
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "policies/v9/r/src.rego:3" not in out  # the ref is reported by the parser, not by line
    assert "the package needs a METADATA block" in out
    assert "data.kubernetes.pods" in out
    assert out.strip().endswith("problems") and "rego lint: 1 modules, 2 problems" in out
