"""The reviewed deviations (deviations.yaml next to this file) and their rendering into
docs/upstream/deviations.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubeflow_trainer_policy.oracle.differential import Deviation
from kubeflow_trainer_policy.paths import PROJECT_ROOT

DATA = Path(__file__).with_name("deviations.yaml")
DOC = PROJECT_ROOT / "docs" / "upstream" / "deviations.md"
STATUSES = ("intended", "pending")
KEYS = ("id", "status", "profiles", "side", "field", "type", "detail", "reason", "example")


def load(path: Path = DATA) -> list[Deviation]:
    body = yaml.safe_load(path.read_text()) or []
    if not isinstance(body, list):
        raise ValueError(f"{path}: want a list of deviations")
    seen: set[str] = set()
    out = []
    for i, entry in enumerate(body):
        missing = [k for k in KEYS if k not in entry]
        if missing:
            raise ValueError(f"{path}: entry {i}: missing {', '.join(missing)}")
        if entry["status"] not in STATUSES or entry["side"] not in ("oracle", "policy", "both"):
            raise ValueError(f"{path}: {entry['id']}: status must be one of {STATUSES}, side oracle, policy or both")
        if entry["id"] in seen:
            raise ValueError(f"{path}: {entry['id']}: listed twice")
        seen.add(entry["id"])
        out.append(
            Deviation(
                id=entry["id"],
                status=entry["status"],
                profiles=tuple(entry["profiles"]),
                side=entry["side"],
                field=entry["field"],
                type=entry["type"],
                detail=entry["detail"],
                reason=" ".join(entry["reason"].split()),
                example=entry["example"],
                when_oracle=entry.get("when_oracle", ""),
                when_policy=entry.get("when_policy", ""),
            )
        )
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(deviations: list[Deviation]) -> str:
    lines = [
        "# Where the policies and the Trainer's own validation differ, on purpose or for now",
        "",
        "Issue 39, item 3. The differential test (`tests/oracle/`) judges generated admission requests with the",
        "validating webhooks of each Trainer release (`tools/trainer-oracle`, built from the Go module proxy) and with",
        "the bundled policies of the matching profile (`v2.0.1` → `v2.0`, `v2.1.0` → `v2.1`, `v2.2.1` → `v2.2`,",
        "`v2.3.0` → `v2.3`). Every difference must match one row below, and every row's example must still",
        "show its difference (`tests/oracle/test_differential.py` holds the list exact). `oracle` side: the",
        "Trainer reports the error and the policies do not; `policy` side: the other way round. `intended`: the",
        "project differs on purpose, or Gatekeeper cannot see what the webhook sees; `pending`: a gap of the rules",
        "being closed (issue 39 item 0), a bug until it is. Generated from `tests/oracle/deviations.yaml`",
        "(`python -m tests.oracle.deviations` rewrites this page).",
        "",
    ]
    for status in STATUSES:
        rows = [d for d in deviations if d.status == status]
        lines += [f"## {status}", ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines += ["| id | profiles | side | field | type | detail (regex) | reason |", "|---|---|---|---|---|---|---|"]
        for d in rows:
            reason = d.reason + (f" (only when the Trainer reports `{d.when_oracle}`)" if d.when_oracle else "")
            reason += f" (only when the policies report `{d.when_policy}`)" if d.when_policy else ""
            cells = [d.id, " ".join(d.profiles), d.side, f"`{d.field}`", f"`{d.type}`", f"`{d.detail}`", reason]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def example_request(deviation: Deviation, profile: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The deviation's example for the profile: `example` is one request, or a request per profile."""
    from tests.oracle.strategies import review_of

    ex = deviation.example if "operation" in deviation.example else deviation.example[profile]
    return review_of(ex["operation"], ex["object"], ex.get("oldObject")), list(ex.get("objects") or [])


if __name__ == "__main__":
    DOC.write_text(render(load()))
    print(DOC)
