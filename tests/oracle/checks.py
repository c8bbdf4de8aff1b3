"""docs/upstream/checks.md's rows as patterns over what the oracle reports, so a campaign can say which generated
requests exercise each check and which checks no request reached."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubeflow_trainer_policy.oracle.run import Decision
from kubeflow_trainer_policy.paths import PROJECT_ROOT

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
