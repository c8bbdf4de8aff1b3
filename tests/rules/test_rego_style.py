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
from kubeflow_trainer_policy.lint.modules import LoadGroup, Module, annotation_errors, entry_modules, load_groups
from kubeflow_trainer_policy.lint.parens import check_lines
from kubeflow_trainer_policy.lint.rego_style import check_module, code_of
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

default allowed := false

allowed if {
\t# A comment in a body.
\tx.a == 1
\tx["in"] == 1 # keywords stay bracketed
}

f(v) := v if {
\tis_string(v)
} else := ""

# A comment above a rule.
g(v) := (v + 1) * 2

unions := {
\t"k": ({1} | {2}),
\t"n": count({1} | {2}),
}
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
        # writeElse: an else after a one-line `if` goes to a line of its own, after a blank line
        (FORMATTED.replace('v if {\n\tis_string(v)\n} else := ""', 'v if is_string(v) else := ""'), "writeElse"),
        (FORMATTED.replace('}} else := ""', '}\nelse := ""').replace('\n} else := ""', '\n}\nelse := ""'), "writeElse"),
        # writeHead: `:= true` before `if` is dropped; `:=` in every head
        (FORMATTED.replace("allowed if {", "allowed := true if {"), "drops `:= true`"),
        (FORMATTED.replace("g(v) := (v + 1) * 2", "g(v) = (v + 1) * 2"), "writes `:=` in a rule head"),
        (FORMATTED.replace('} else := ""', '} else := "" if {\n\ttrue\n}'), "only `true`"),
        (FORMATTED.replace("y if x.a == 1", "y := 1 if true"), "only `true`"),
        # writeRule: a one-line body is `if <expression>`
        (FORMATTED.replace("y if x.a == 1", "y if { x.a == 1 }"), "one-line body"),
        # writeRules: blank lines between rules, after a default rule, before a comment
        (FORMATTED.replace("default allowed := false\n\n", "default allowed := false\n"), "after a default rule"),
        (FORMATTED.replace("\n\n# A comment above a rule.", "\n# A comment above a rule."), "the comment below it"),
        # writePackage / writeImports / writeComments
        (FORMATTED.replace("package p\n\n", "package p\n"), "after the package"),
        (FORMATTED.replace("violations\n\nx := {", "violations\nx := {"), "after the imports"),
        (FORMATTED.replace("# METADATA\n# title: v", "# METADATA\n# title: w\n# METADATA\n# title: v"), "two METADATA"),
        # comments: `# ` after the hash (Regal), one space before an end-of-line comment (endLine)
        (FORMATTED.replace("# A comment above", "#A comment above"), "no-whitespace-comment"),
        (FORMATTED.replace("1 # keywords", "1  # keywords"), "one space before a comment"),
        # writeRefStringPath: x["key"] is x.key when key is a var name and not a keyword
        (FORMATTED.replace("\tx.a == 1\n", '\tx["a"] == 1\n'), 'ref ["a"] as .a'),
        (FORMATTED.replace("\tx.a == 1\n", '\tx["\\u00e9-\\/"] == 1\n'), 'as ["é-/"]'),
        # spacing of operators and object entries
        (FORMATTED.replace("x.a == 1\n", "x.a==1\n"), "one space on each side"),
        (FORMATTED.replace('"k": (', '"k":('), "key: value"),
        (FORMATTED.replace("(v + 1) * 2", "(v + 1)  * 2"), "one space between tokens"),
        (FORMATTED.replace("g(v) := (v + 1) * 2", "g(v) := [1 | true;v]"), "with `; `"),
        # writeCall / objectWriter: parentheses around nested infix calls, exactly where opa fmt puts them
        (FORMATTED.replace("(v + 1) * 2", "v + 1 * 2"), "parenthesizes the nested infix call"),
        (FORMATTED.replace("(v + 1) * 2", "(v * 2)"), "without parentheses"),
        (FORMATTED.replace('"k": ({1} | {2}),', '"k": {1} | {2},'), "parenthesizes the nested infix call"),
        (FORMATTED.replace('x := {\n\t"a": 1,', 'x := {"a": 1,'), "below its bracket"),
        (FORMATTED.replace("\t# A comment in a body.", "\t\t# A comment in a body."), "indents this comment by 1"),
        (
            FORMATTED.replace('} else := ""\n\n# A comment above a rule.\n', '}\n\nelse := ""\n'),
            "after a default rule or an else chain",
        ),
        # the last open bracket of a line indents, and only it
        (FORMATTED.replace("\tv := violations.make(\n\t\t", "\tv := violations.make(\n\t\t\t"), "indents"),
    ],
)
def test_the_style_check_reports(broken, message):
    problems = check_module("broken.rego", broken, entry=True)
    assert any(message in str(p) for p in problems), problems


def test_ref_strings_that_strconv_quote_leaves_alone_pass():
    for key in ["a-b", "é", "in", "a\\tb", '\\"q\\"']:
        text = FORMATTED.replace("\tx.a == 1\n", f'\tx["{key}"] == 1\n')
        assert check_module("ok.rego", text, entry=True) == [], key


def test_strings_and_comments_do_not_count_as_code():
    text = FORMATTED.replace('"f",', '"f { [ ,x", # a comment ( with brackets')
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


# --- parentheses: what format.go's writeCall, writeInOperator, objectWriter and listWriter print -----------
# Lines of OPA's own golden files (v1/format/testfiles/v0/test_union_call_parens.rego.formatted and
# v1/format/testfiles/v1/test.rego.formatted, rule nested_infix) and the forms the formatter rewrites.

OPA_FORMATTED_LINES = [
    "set_element := {(x | y)}",
    "array_element := [(x | y)]",
    'object_value := {"k": (x | y)}',
    'object_key := {(x | y): "v"}',
    "union_of_unions := {((x | y) | z)}",
    "multiple_set_elements := {(x | y), z}",
    'multiple_object_entries := {"k": (x | y), "j": z}',
    "array_comprehension_term := [(a | b) | c]",
    "object_comprehension_key_and_value := {(a | b): (c | d) | e}",
    "union_outside_collection := x | y",
    "intersection_in_set := {x & y}",
    "union_as_call_argument := f(a | b)",
    "union_as_ref_operand := q[a | b]",
    "union_in_comprehension_body := [x | y := a | b]",
    "\tx = y + 2",
    "\ty = (x + 1) + 2",
    "\tx = (a + b) / 2",
    "\tf((a + b) / 2)",
    "\tsome x in (a | b)",
    "\tx in (a | b)",
    "\tcount(x) + 1 == 2",
    "\tevery x in a | b {",
    "\tevery k, v in (a | b) | c {",
]


@pytest.mark.parametrize("line", OPA_FORMATTED_LINES)
def test_parentheses_as_opa_fmt_prints_them_pass(line):
    assert check_lines([code_of(line)]) == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("union_of_unions := {(x | y | z)}", "parenthesizes"),
        ('object_value := {"n": 1, "k": x | y}', "parenthesizes"),
        ("array_element := [1, x | y]", "parenthesizes"),
        ("\ty = x + 1 + 2", "parenthesizes"),
        ("\tx = a + b / 2", "parenthesizes"),
        ("\tsome x in a | b", "parenthesizes"),
        ("\tx in a | b", "parenthesizes"),
        ("\tcount(x) + 1 + 1 == 2", "parenthesizes"),
        ("\tx = (y + 2)", "without parentheses"),
        ("\tf(((a + b)) / 2)", "without parentheses"),
        ("union_outside_collection := (x | y)", "without parentheses"),
        ("\tevery x in (a | b) {", "without parentheses"),
        ("\tevery x in a | b | c {", "parenthesizes"),
    ],
)
def test_parentheses_opa_fmt_would_change_are_reported(line, message):
    problems = check_lines([code_of(line)])
    assert problems and all(n == 1 for n, _ in problems)
    assert any(message in p for _, p in problems), problems


def test_a_multi_line_object_value_union_needs_the_parentheses_too():
    """What lib.trainer.podsets emitted: a union of three comprehensions as a value of a multi-line object."""
    lines = ["x := {", '\t"invalid": a | b | c,', "}"]
    assert [n for n, _ in check_lines([code_of(line) for line in lines])] == [2, 2]
    lines[1] = '\t"invalid": ((a | b) | c),'
    assert check_lines([code_of(line) for line in lines]) == []


# --- strict mode ------------------------------------------------------------------------------------------

STRICT_OK = """package p

import data.lib.trainer.review

f(x, _) := y if {
\ty := x + 1
} else := 0 if {
\tx == 2
}

g(obj) := [k | some k, v in obj; w := v; w != null]

h := review.get(input, ["a"], null)
"""


REVIEW = "import data.lib.trainer.review\n"


def _strict(text: str) -> list[str]:
    from kubeflow_trainer_policy.engine.rego_ast import RegoParser
    from kubeflow_trainer_policy.lint.strict import strict_problems

    return strict_problems(RegoParser().parse_raw("strict.rego", text))


def test_strict_mode_passes_a_clean_module():
    assert _strict(STRICT_OK) == []


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (STRICT_OK.replace(REVIEW, REVIEW + "import data.other\n"), "unused import data.other"),
        (STRICT_OK.replace(REVIEW, REVIEW + "import data.q.review\n"), "duplicate import"),
        (STRICT_OK.replace("\ty := x + 1\n", "\tz := 2\n\ty := x + 1\n"), "assigned var z unused"),
        (STRICT_OK.replace("w := v; w != null", "w := v; v != null"), "assigned var w unused"),
        (STRICT_OK.replace("f(x, _)", "f(x, unused)"), "unused argument unused"),
        (STRICT_OK.replace("h := review.get", "h := any([true]) + review.get"), "deprecated built-in any"),
        (STRICT_OK.replace("\ty := x + 1\n", "\tinput := 1\n\ty := x + input\n"), "reserved `input`"),
    ],
)
def test_strict_mode_reports(broken, message):
    assert any(message in p for p in _strict(broken)), _strict(broken)


def test_an_argument_used_in_any_branch_of_an_else_chain_is_used():
    """rewriteLocalVars collects unused arguments across a rule's else branches before reporting them."""
    text = "package p\n\nf(x) := 1 if {\n\tx > 0\n} else := 2\n"
    assert _strict(text) == []


def test_the_lint_covers_each_bundles_decision_module():
    modules = entry_modules(PROJECT_ROOT)
    assert [m.path for m in modules] == [f"bundle {p}: kubeflow/trainer/decision.rego" for p in sorted(PROFILES)]
    assert all("package kubeflow.trainer" in m.text for m in modules)
    for module in modules:  # its METADATA is YAML that OPA reads, and a broken one would be reported
        assert annotation_errors(LoadGroup(module.path, (module,))) == []
    broken = Module("d.rego", modules[0].text.replace("# title: decision", "# title: decision: a"), False, False)
    assert "mapping values are not allowed" in annotation_errors(LoadGroup("d", (broken,)))[0]
