"""Report formats CI systems read, shared by `review` and `test`: JUnit XML and a plain-text table.

The JUnit document follows the common (Jenkins/Ant) schema that GitLab, GitHub Actions reporters, Jenkins and
Azure Pipelines read: `<testsuites>` of `<testsuite name tests failures errors skipped>` of
`<testcase name classname>`, each with at most one `<failure message type>` or `<error message type>` and an
optional `<system-out>`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field


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
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(c.failure is not None for c in suite.cases),
            "errors": sum(c.error is not None and c.failure is None for c in suite.cases),
        }
        element = ET.SubElement(root, "testsuite", name=suite.name, **{k: str(v) for k, v in counts.items()})
        element.set("skipped", "0")
        for key in totals:
            totals[key] += counts[key]
        for case in suite.cases:
            item = ET.SubElement(element, "testcase", name=case.name, classname=case.classname)
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
    """XML 1.0 cannot hold most control characters, whatever the escaping: they become U+FFFD."""
    allowed = "\t\n\r" if multiline else "\t"
    cleaned = "".join(c if c >= " " or c in allowed else "\ufffd" for c in text)
    return cleaned if multiline else " ".join(cleaned.split())


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, the last one left ragged."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [headers, *rows]]
    return "\n".join(lines)
