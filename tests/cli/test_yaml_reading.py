"""The manifest reader's YAML (issue 40): bad YAML is reported from libyaml's one pass, never by parsing the input
again in pure Python (that took 17.8 s of CPU for an 8,000-deep 16 KB input and minutes for 20 MB with one error
at its end), with the place of the error; and the spellings of the issue are read as kubectl reads them (the
whole corpus is held against kubectl and a real API server in tests/kube/test_yaml_numbers.py)."""

from __future__ import annotations

import pytest
import yaml

from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider import reader

BAD = [
    ("kind: [unclosed", "at line 1, column 16: did not find expected ',' or ']'"),
    ("a: [1,2\n", "at line 2, column 1: did not find expected ',' or ']'"),
    ("a: b\n  c: d\n", "at line 2, column 4: mapping values are not allowed in this context"),
    ("a: {b: c\n\n\n", "at line 4, column 1: did not find expected ',' or '}'"),
    ("a: b\n\tc: d\n", "at line 2, column 1: found a tab character that violates indentation"),
    ("a: !!int x\n", "at line 1, column 4: cannot decode `x` as a !!int"),
    ("a: " + "[" * 8000 + "\n", "invalid YAML at line 1"),
    ("a: " + "{b: " * 8000 + "\n", "nested deeper than the limit of 512"),
]


@pytest.fixture
def no_pure_python_parser(monkeypatch):
    """Instrumentation, not a fake: any use of PyYAML's pure-Python scanner fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("the pure-Python YAML scanner was used")

    monkeypatch.setattr(yaml.scanner.Scanner, "__init__", refuse)


@pytest.mark.parametrize(("text", "message"), BAD, ids=[f"{i}:{t[:12]}" for i, (t, _) in enumerate(BAD)])
def test_bad_yaml_is_one_error_from_one_pass_never_a_pure_python_reparse(no_pure_python_parser, text, message):
    with pytest.raises(InputError, match=r"^in\.yaml: ") as caught:
        list(reader.parse(text, "in.yaml"))
    assert message in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(InputError, match=r"^in\.yaml: "):
        reader.parse_value(text, "in.yaml")


def test_an_error_at_the_end_of_a_large_stream_is_found_in_the_same_pass(no_pure_python_parser):
    """The issue's 20 MB case, smaller: the error is named where it is, after thousands of good documents."""
    good = "".join(f"---\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{a: '1'}}\n" for i in range(20_000))
    text = good + "---\nmetadata: {name: [unclosed\n"
    lines = text.count("\n")
    with pytest.raises(InputError, match=rf"^big.yaml: invalid YAML at line {lines + 1}, column 1: "):
        list(reader.parse(text, "big.yaml"))


@pytest.mark.parametrize(
    ("spelling", "value"),
    [("1e3", 1000), ("1E3", 1000), ("1.0e3", 1000), ("+1e3", 1000), ("0o10", 8), ("012", 10), ("1:20", "1:20")],
)
def test_the_issue_spellings_are_numbers_as_kubectl_reads_them(spelling, value):
    (document,) = reader.parse(f"kind: TrainJob\nspec:\n  trainer:\n    numNodes: {spelling}\n", "job.yaml")
    assert document.body["spec"]["trainer"]["numNodes"] == value
    assert type(document.body["spec"]["trainer"]["numNodes"]) is type(value)
