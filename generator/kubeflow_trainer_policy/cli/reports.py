"""Report formats CI systems read, shared by `review` and `test`: JUnit XML and a plain-text table.

The JUnit document follows the common (Jenkins/Ant) schema that GitLab, GitHub Actions reporters, Jenkins and
Azure Pipelines read: `<testsuites>` of `<testsuite name tests failures errors skipped>` of
`<testcase name classname>`, each with at most one `<failure message type>` or `<error message type>` and an
optional `<system-out>`.

Names come from file names (any bytes but `/` and NUL; bytes that are not UTF-8 reach Python as lone surrogates)
and from the objects under review (any string, lone surrogates included, through JSON's `\\ud800`). None of
that may reach a report raw: XML 1.0 cannot hold control characters or surrogates at all, JSON with a lone
surrogate is not UTF-8, and a terminal runs the escape sequences it is sent. `visible` writes each such
character as an escape (`\\x1b`, `\\xff` for a byte that was not UTF-8, `\\ud800`), the same in every format.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
"""C0 and C1 controls, DEL, surrogates, and the two characters XML 1.0 excludes besides them."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str, keep: str = "") -> str:
    """`text` with every control character, surrogate, U+FFFE and U+FFFF written as an escape (`keep`: those
    left as they are, such as the newlines of a multi-line body): safe for a terminal, XML and UTF-8."""
    if keep:
        return _HIDDEN.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
    return _HIDDEN.sub(_escape, text)


def unicode_safe(value: Any) -> Any:
    """`value` (JSON-like) with lone surrogates in its strings and keys escaped, so it encodes as UTF-8. Control
    characters stay: JSON escapes them itself."""
    if isinstance(value, str):
        return _SURROGATES.sub(_escape, value)
    if isinstance(value, dict):
        return {unicode_safe(k): unicode_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unicode_safe(v) for v in value]
    return value


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    failure: str | None = None
    """The failure's message: the check ran and said no (a denial, a failed test)."""
    error: str | None = None
    """The error's message: the check could not run (bad input, engine error)."""
    detail: str = ""
    """The failure's or error's text body."""
    output: str = ""
    """Anything else worth showing (warn and dryrun violations): `<system-out>`."""
    failure_type: str = "failure"


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)


def junit_xml(name: str, suites: Sequence[Suite]) -> str:
    root = ET.Element("testsuites", name=visible(name))
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(c.failure is not None for c in suite.cases),
            "errors": sum(c.error is not None and c.failure is None for c in suite.cases),
        }
        element = ET.SubElement(root, "testsuite", name=visible(suite.name), **{k: str(v) for k, v in counts.items()})
        element.set("skipped", "0")
        for key in totals:
            totals[key] += counts[key]
        for case in suite.cases:
            item = ET.SubElement(element, "testcase", name=visible(case.name), classname=visible(case.classname))
            if case.failure is not None:
                failure = ET.SubElement(item, "failure", message=_clean(case.failure), type=case.failure_type)
                failure.text = _clean(case.detail or case.failure, multiline=True)
            elif case.error is not None:
                error = ET.SubElement(item, "error", message=_clean(case.error), type="error")
                error.text = _clean(case.detail or case.error, multiline=True)
            if case.output:
                ET.SubElement(item, "system-out").text = _clean(case.output, multiline=True)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _clean(text: str, *, multiline: bool = False) -> str:
    """XML 1.0 cannot hold most control characters, whatever the escaping: they are written as escapes."""
    if multiline:
        return visible(text, keep="\t\n")
    return " ".join(visible(text, keep="\t\n\r").split())


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, the last one left ragged; every cell made `visible`."""
    headers = [visible(str(cell)) for cell in headers]
    rows = [[visible(str(cell)) for cell in row] for row in rows]
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [headers, *rows]]
    return "\n".join(lines)
