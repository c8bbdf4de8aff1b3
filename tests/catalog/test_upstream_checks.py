"""docs/upstream/checks.md lists every admission check of each Trainer release and what covers it. These tests
read its table and fail when a row names a rule or case that the tag's profile does not have, or whose cases
never expect a violation there, or when a row is malformed (no source, no anchor, no reason)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from kubeflow_trainer_policy.catalog import load_catalog
from kubeflow_trainer_policy.catalog.model import Case
from kubeflow_trainer_policy.profiles import get_profile

CHECKS = Path(__file__).resolve().parents[2] / "docs" / "upstream" / "checks.md"
TAG_PROFILES = {"v2.0.1": "v2.0", "v2.1.0": "v2.1", "v2.2.1": "v2.2", "v2.3.0": "v2.3"}
HEADER = ["id", "tags", "mechanism", "where", "line", "anchor", "check", "covered by"]
REASONED = ("out of scope: ", "gap: ")


@dataclass(frozen=True)
class Row:
    id: str
    tags: tuple[str, ...]
    mechanism: str
    where: str
    line: str
    anchor: str
    check: str
    covered_by: str

    def coverage(self) -> dict[str, tuple[str, ...]]:
        """{rule id: case names} of a `<rule>: <case>, <case>; <rule>: ...` cell (a case may be followed by a note in
        parentheses); {} for a reasoned row."""
        if self.covered_by.startswith(REASONED):
            return {}
        found = {}
        for part in re.sub(r"\s*\([^)]*\)", "", self.covered_by).split(";"):
            rule, sep, cases = part.partition(":")
            if not sep:
                raise ValueError(f"{self.id}: covered-by cell {self.covered_by!r} is not `<rule>: <cases>`")
            found[rule.strip()] = tuple(c.strip() for c in cases.split(",") if c.strip())
        return found


def split_cells(line: str) -> list[str]:
    """The cells of a Markdown table row: `|` separates them except inside backticks."""
    cells, current, in_code = [], [], False
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    cells.append("".join(current).strip())
    return cells


def parse(text: str) -> list[Row]:
    """The rows of the table whose header is HEADER (the `## Checks` table)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and split_cells(line) == HEADER)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = split_cells(line)
        if len(cells) != len(HEADER):
            raise ValueError(f"row with {len(cells)} cells instead of {len(HEADER)}: {line}")
        id_, tags, mechanism, where, line_no, anchor, check, covered = cells
        rows.append(Row(id_, tuple(tags.split()), mechanism, where, line_no, anchor, check, covered))
    return rows


@cache
def rules() -> dict:
    return {rule.id: rule for rule in load_catalog()}


@cache
def profile_cases(rule_id: str, profile: str) -> dict[str, Case]:
    return {case.name: case for case in rules()[rule_id].cases(get_profile(profile))}


def problems(row: Row) -> list[str]:
    """What is wrong with a row: its shape, and for each tag the rules and cases it names."""
    found = []
    if not row.tags or set(row.tags) - set(TAG_PROFILES):
        found.append(f"{row.id}: tags {row.tags} are not among {sorted(TAG_PROFILES)}")
    if not re.search(r"`[^`]*(pkg|manifests)/[^`]+`", row.where):
        found.append(f"{row.id}: `where` names no upstream file")
    if not re.fullmatch(r"`[^`]+`", row.anchor):
        found.append(f"{row.id}: the anchor must be one backticked text to grep for")
    if not row.check:
        found.append(f"{row.id}: no description of the check")
    if row.covered_by.startswith(REASONED):
        if len(row.covered_by.split(":", 1)[1].strip()) < 20:
            found.append(f"{row.id}: the reason is missing or too short")
        return found
    try:
        coverage = row.coverage()
    except ValueError as error:
        return [*found, str(error)]
    for tag in row.tags:
        profile = TAG_PROFILES.get(tag)
        if profile is None:
            continue
        denied_somewhere = False
        for rule_id, case_names in coverage.items():
            if rule_id not in rules():
                found.append(f"{row.id}: rule {rule_id} does not exist")
                continue
            if not case_names:
                found.append(f"{row.id}: no case named for {rule_id}")
            known = profile_cases(rule_id, profile)
            for name in case_names:
                if name not in known:
                    found.append(f"{row.id} ({tag}): {rule_id} has no case {name} in profile {profile}")
                elif known[name].expected:
                    denied_somewhere = True
        if not denied_somewhere:
            found.append(f"{row.id} ({tag}): none of its cases expects a violation in profile {profile}")
    return found


ROWS = parse(CHECKS.read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row_maps_to_cases_of_each_tags_profile(row: Row):
    assert problems(row) == []


def test_rows_are_unique_and_every_tag_has_every_kind_of_check():
    assert len({r.id for r in ROWS}) == len(ROWS)
    for tag in TAG_PROFILES:
        mechanisms = {r.mechanism.split()[0] for r in ROWS if tag in r.tags}
        # webhook or runtime lookup, plugins, CRD CEL, OpenAPI limits: each tag lists all four kinds.
        assert {"runtime", "jobset", "torch", "mpi", "CRD", "OpenAPI"} <= mechanisms, (tag, mechanisms)


def test_a_row_naming_a_missing_case_or_only_allowed_cases_is_caught():
    """The guard itself: a case that does not exist, a rule that does not exist, and cases that all expect the
    request to pass are each reported (so a typo or a stale mapping in the table fails the suite)."""
    base = next(r for r in ROWS if r.id == "J5")
    missing_case = Row(**{**base.__dict__, "covered_by": "trainjob-runtime-ref: no_such_case"})
    missing_rule = Row(**{**base.__dict__, "covered_by": "no-such-rule: some_case"})
    allowed_only = Row(**{**base.__dict__, "covered_by": "trainjob-runtime-ref: initializer_volume_mount_not_needed"})
    wrong_tag = Row(**{**base.__dict__, "tags": ("v2.2.1",)})
    no_reason = Row(**{**base.__dict__, "covered_by": "gap: "})
    assert any("no case no_such_case" in p for p in problems(missing_case))
    assert any("rule no-such-rule does not exist" in p for p in problems(missing_rule))
    assert any("none of its cases expects a violation" in p for p in problems(allowed_only))
    # The v2.3 volumeMount cases exist in v2.2 too, but expect no violation there: a wrong tag is caught.
    assert any("profile v2.2" in p for p in problems(wrong_tag))
    assert any("reason is missing" in p for p in problems(no_reason))


def test_the_v2_3_initializer_volume_mount_check_is_listed_for_v2_3_only():
    """The check issue 26 found missing: listed, for v2.3.0 alone, and covered by trainjob-runtime-ref."""
    rows = [r for r in ROWS if "must have volumeMount with name" in r.anchor]
    assert rows and all(r.tags == ("v2.3.0",) for r in rows), rows
    assert all("trainjob-runtime-ref" in r.coverage() for r in rows)
