"""docs/upstream/checks.md's rows as patterns over what the oracle reports, so a campaign can say which generated
requests exercise each check and which checks no request reached."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from kubeflow_trainer_policy.oracle.build import RELEASE_OF_PROFILE
from kubeflow_trainer_policy.oracle.run import Decision
from kubeflow_trainer_policy.paths import PROJECT_ROOT

WITNESSES = Path(__file__).with_name("witnesses")
"""One generated request per (profile, check) that the oracle shows reaching the check: `<profile>-<id>.json`,
{profile, check, review, objects}; the campaign's `--witnesses` writes them, test_checks replays them."""
SECTION = "## Oracle cases"

CHECKS = PROJECT_ROOT / "docs" / "upstream" / "checks.md"
ROW = re.compile(
    r"^\| (?P<id>[A-Z]+\d+) \| (?P<tags>[v0-9. ]+) \| (?P<mechanism>[^|]+) \|(?:[^|]*\|){2} `(?P<anchor>[^`]+)` \|"
)
BY_TYPE = {"field.Duplicate(": "Duplicate", "field.InternalError(": "Internal"}
OBSERVABLE_MECHANISMS = ("webhook", "runtime lookup", "plugin", "runtime webhooks", "CRD CEL")
"""What the oracle runs: the webhooks, the runtime framework behind them, and the CRD's CEL rules. Not the webhook
configuration (R4: which objects reach the webhook) nor OpenAPI markers (their messages are Kubernetes' own)."""


@dataclass(frozen=True)
class Check:
    id: str
    tags: tuple[str, ...]
    mechanism: str
    anchor: str

    @property
    def observable(self) -> bool:
        """Whether the oracle's output can show it: a check with a message (or error type) to look for."""
        if "configuration" in self.mechanism or not any(m in self.mechanism for m in OBSERVABLE_MECHANISMS):
            return False
        return self.anchor in BY_TYPE or not re.search(r"[(+]", self.message)

    @property
    def message(self) -> str:
        """The anchor's message: a CEL marker's `message="..."` value, else the anchor itself."""
        found = re.fullmatch(r'message="(.*)"', self.anchor)
        return found.group(1) if found else self.anchor

    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"(%[svdq])", self.message)
        return re.compile("".join(".*" if re.fullmatch(r"%[svdq]", x) else re.escape(x) for x in parts))

    def reached_by(self, decision: Decision) -> bool:
        if self.anchor in BY_TYPE:
            return any(t == BY_TYPE[self.anchor] for _, t, _ in decision.errors)
        pattern = self.pattern()
        texts = [d for _, _, d in decision.errors] + list(decision.warnings) + [decision.message]
        return any(pattern.search(t) for t in texts if t)


def load() -> list[Check]:
    checks = []
    for line in CHECKS.read_text().splitlines():
        found = ROW.match(line)
        if found:
            checks.append(Check(found["id"], tuple(found["tags"].split()), found["mechanism"].strip(), found["anchor"]))
    return checks


def witnesses() -> dict[tuple[str, str], Path]:
    """(profile, check id) -> its witness file."""
    out = {}
    for path in sorted(WITNESSES.glob("*.json")):
        body = json.loads(path.read_text())
        out[(body["profile"], body["check"])] = path
    return out


def render_section(checks: list[Check], found: dict[tuple[str, str], Path]) -> str:
    """The section of checks.md naming, for each check the oracle can show, the generated requests (witnesses)
    that exercise it in each profile of its tags, and `not reached` where the campaign found none."""
    lines = [
        SECTION,
        "",
        "Issue 39, item 4. For each check the Trainer oracle (`tools/trainer-oracle`) can show, the generated request",
        "of the differential campaign that exercises it in each profile (files in `tests/oracle/witnesses/`, replayed",
        "by `tests/oracle/test_checks.py`); `not reached` where no generated request did (`not run`: no campaign",
        "recorded for that profile yet). Checks the oracle cannot show (the webhook configuration, OpenAPI markers,",
        "checks named by code rather than message) are left out.",
        "Rewritten by `python -m tests.oracle.checks` from the witness files.",
        "",
        "| id | " + " | ".join(RELEASE_OF_PROFILE) + " |",
        "|---|" + "---|" * len(RELEASE_OF_PROFILE),
    ]
    run = {profile for profile, _ in found}
    for check in checks:
        if not check.observable:
            continue
        cells = []
        for profile, tag in RELEASE_OF_PROFILE.items():
            if tag not in check.tags:
                cells.append("—")
            elif profile not in run:
                cells.append("not run")
            elif (profile, check.id) in found:
                cells.append(f"`{found[(profile, check.id)].name}`")
            else:
                cells.append("not reached")
        lines.append(f"| {check.id} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def with_section(text: str, section: str) -> str:
    head = text.split(SECTION)[0].rstrip("\n")
    return head + "\n\n" + section


if __name__ == "__main__":
    CHECKS.write_text(with_section(CHECKS.read_text(), render_section(load(), witnesses())))
    print(CHECKS)
