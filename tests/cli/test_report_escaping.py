"""Issue 40, item 5: names in reports, whatever they hold. File names are any bytes but `/` and NUL (bytes that are
not UTF-8 reach Python as lone surrogates), object names any string (JSON's `\\ud800` makes a lone surrogate).
`-o junit` was not XML with a control character or such a byte in a name, text output passed terminal escapes
raw (and died on a lone surrogate), JSON carried lone surrogates. Checked with hypothesis: directly on the report
functions, and on real files reviewed by real `trainer-policy review` processes in each format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import xmlschema
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.cli.reports import Case, Suite, junit_xml, table, unicode_safe, visible
from tests.cli.helpers import PROJECT_ROOT

JUNIT = xmlschema.XMLSchema(Path(__file__).with_name("fixtures") / "junit.xsd")
ANY_CHAR = st.characters(exclude_categories=())  # surrogates and controls included
ANY_TEXT = st.text(ANY_CHAR, max_size=30)
FILE_BYTES = st.binary(min_size=1, max_size=24).map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_"))
"""A file name's bytes (any but `/` and NUL)."""
NAMES = st.one_of(ANY_TEXT, FILE_BYTES.map(os.fsdecode))


def _hidden(text: str, allowed: str = "") -> list[str]:
    """Characters a terminal, XML 1.0 or UTF-8 cannot take raw (controls, DEL, C1, surrogates, U+FFFE/U+FFFF)."""
    return [
        c
        for c in text
        if c not in allowed
        and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF or c in "\ufffe\uffff")
    ]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.tuples(NAMES, NAMES, NAMES, NAMES, NAMES), min_size=1, max_size=4))
def test_junit_json_and_text_of_any_name(names: list[tuple[str, str, str, str, str]]) -> None:
    suites = [
        Suite(suite, [Case(classname, name, failure=message, detail=detail, failure_type="denied")])
        for suite, classname, name, message, detail in names
    ]
    document = junit_xml("trainer-policy review", suites)
    document.encode("utf-8")  # strict: no lone surrogate
    root = ET.fromstring(document)
    JUNIT.validate(document)
    for (_suite, classname, name, message, _), element in zip(names, root.iter("testcase"), strict=True):
        assert element.get("name") == visible(name) and element.get("classname") == visible(classname)
        assert element.find("failure").get("message") == " ".join(visible(message, keep="\t\n\r").split())
    assert [s.get("name") for s in root.iter("testsuite")] == [visible(n[0]) for n in names]

    body = json.dumps(unicode_safe({"results": [{"file": n[0], "name": n[2], n[1]: n[3]} for n in names]}))
    assert not [c for s in _strings(json.loads(body)) for c in s if 0xD800 <= ord(c) <= 0xDFFF]
    json.dumps(unicode_safe(names), ensure_ascii=False).encode("utf-8")

    text = table(("FILE", "NAME"), [(n[0], n[2]) for n in names])
    assert _hidden(text, allowed="\n") == []
    text.encode("utf-8")


def test_visible_writes_each_kind_of_character_as_an_escape() -> None:
    assert visible("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07"
    assert visible(os.fsdecode(b"f\xff.json")) == "f\\xff.json"  # the byte, as the file system holds it
    assert visible("x\ud800y\ufffe\x85\x7f") == "x\\ud800y\\ufffe\\x85\\x7f"
    assert visible("line\nnext\tcol", keep="\n") == "line\nnext\\x09col"
    assert visible("plain ü ✓ \u202e") == "plain ü ✓ \u202e"  # printable text stays as it is


OBJECT = st.fixed_dictionaries(
    {
        "kind": st.one_of(st.just("TrainJob"), ANY_TEXT),
        "namespace": ANY_TEXT,
        "name": ANY_TEXT,
        "runtime": ANY_TEXT,
    }
)


def _write(folder: Path, index: int, file_name: bytes, spec: dict[str, str]) -> Path:
    body = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": spec["kind"],
        "metadata": {"name": spec["name"], "namespace": spec["namespace"]},
        "spec": {"runtimeRef": {"name": spec["runtime"]}},
    }
    path = os.path.join(os.fsencode(folder), b"%d-" % index + file_name + b".json")
    with open(path, "wb") as handle:
        handle.write(json.dumps(body).encode("ascii"))  # \\ud800 and \\u001b escapes, as JSON allows
    return Path(os.fsdecode(path))


def _review(*args: str | Path) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", "review", *map(str, args)],
        capture_output=True,
        cwd=PROJECT_ROOT,
        timeout=300,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},  # what a UTF-8 terminal or CI log gives: strict UTF-8
    )
    return proc.returncode, proc.stdout, proc.stderr


def _assert_clean_text(data: bytes) -> None:
    text = data.decode("utf-8")  # strict
    assert _hidden(text, allowed="\n") == [], text[:2000]


@settings(max_examples=4, deadline=None)
@given(objects=st.lists(st.tuples(FILE_BYTES, OBJECT), min_size=2, max_size=3))
def test_real_reviews_of_files_and_objects_with_any_names(tmp_path_factory, objects) -> None:
    folder = tmp_path_factory.mktemp("names")
    paths = [_write(folder, i, file_name, spec) for i, (file_name, spec) in enumerate(objects)]

    code, stdout, stderr = _review(folder, "-o", "junit")
    assert code in (0, 1, 2) and b"Traceback" not in stderr, stderr
    JUNIT.validate(ET.tostring(ET.fromstring(stdout)).decode())
    assert len(list(ET.fromstring(stdout).iter("testcase"))) == len(paths)
    _assert_clean_text(stderr)

    code, stdout, stderr = _review(folder, "-o", "json")
    assert b"Traceback" not in stderr, stderr
    results = json.loads(stdout.decode("utf-8"))["results"]
    assert len(results) == len(paths)
    assert not [c for s in _strings(results) for c in s if 0xD800 <= ord(c) <= 0xDFFF]
    _assert_clean_text(stderr)

    code, stdout, stderr = _review(folder)
    assert b"Traceback" not in stderr and b"internal error" not in stderr, stderr
    _assert_clean_text(stdout)
    _assert_clean_text(stderr)

    code, stdout, stderr = _review(paths[0], "-o", "junit")  # one file: its name is the suite's and the case's
    ET.fromstring(stdout)
    _assert_clean_text(stderr)
