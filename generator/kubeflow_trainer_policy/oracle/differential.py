"""The differential check: one admission request (AdmissionReview + cluster objects) judged by the Trainer oracle
of a release and by the bundled policies of the matching profile (trainer-policy review's in-process runner), the
two decisions compared, and each difference matched against the reviewed list of deviations.

A difference is one field error only one side reports (`oracle` = the Trainer denies it and the policies do not;
`policy` = the other way), or a different decision with no field error to show for it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.oracle.run import Decision, FieldError, Oracle

ENFORCED = "deny"


@dataclass(frozen=True)
class Difference:
    side: str
    """`oracle` (only the Trainer reports it) or `policy` (only the policies do)."""
    error: FieldError

    def as_json(self) -> dict[str, str]:
        f, t, d = self.error
        return {"side": self.side, "field": f, "type": t, "detail": d}


@dataclass(frozen=True)
class Deviation:
    """One reviewed, known difference: its pattern (side, field, type, detail regex) and why it exists."""

    id: str
    status: str
    """`intended` (the project differs on purpose or cannot see what the webhook sees) or `pending` (a gap of
    the rules being closed on another branch: a bug until then)."""
    profiles: tuple[str, ...]
    side: str
    """`oracle`, `policy` or `both` (a field error each side words differently)."""
    field: str
    type: str
    detail: str
    """A regular expression the whole detail must match (field and type too are regular expressions)."""
    reason: str
    example: dict[str, Any]
    """A minimal request that shows it: {operation, object, oldObject?, objects}."""
    when_oracle: str = ""
    """If set, it applies only when the Trainer also reports an error whose detail matches this expression."""
    when_policy: str = ""
    """If set, it applies only when the policies also report an error whose detail matches this expression."""

    def matches(
        self, profile: str, difference: Difference, oracle: Decision | None = None, policy: Decision | None = None
    ) -> bool:
        f, t, d = difference.error
        for pattern, decision in ((self.when_oracle, oracle), (self.when_policy, policy)):
            if pattern and not (
                decision is not None and any(re.fullmatch(pattern, x, re.DOTALL) for _, _, x in decision.errors)
            ):
                return False
        return (
            profile in self.profiles
            and self.side in (difference.side, "both")
            and re.fullmatch(self.field, f) is not None
            and re.fullmatch(self.type, t) is not None
            and re.fullmatch(self.detail, d, re.DOTALL) is not None
        )


@dataclass
class Verdict:
    profile: str
    oracle: Decision
    policy: Decision
    differences: list[Difference]
    explained: dict[Difference, str] = field(default_factory=dict)
    """Each explained difference -> the id of the deviation that explains it."""
    skipped: bool = False
    """Not compared: the CRD's schema rejects the object before any webhook (the Trainer's or Gatekeeper's) sees
    it."""

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d not in self.explained]

    @property
    def agrees(self) -> bool:
        return not self.differences


def policy_decision(runner: Any, review: dict[str, Any], objects: list[dict[str, Any]]) -> Decision:
    """What the profile's bundle decides (GatekeeperRunner as `trainer-policy review` drives it): the denying
    violations' details as field errors."""
    from kubeflow_trainer_policy.gatekeeper.review import request_from_document
    from kubeflow_trainer_policy_provider.reader import Document

    runner.set_objects(objects)
    result = runner.review(request_from_document(Document("<oracle>", review)))
    if result.errors:
        raise RuntimeError(f"policy engine error: {result.errors[0]}")
    errors = set()
    for violation in result.violations:
        if violation.enforcement_action != ENFORCED:
            continue
        details = violation.details if isinstance(violation.details, dict) else {}
        errors.add((str(details.get("field", "")), str(details.get("type", "")), str(details.get("detail", ""))))
    return Decision(result.allowed, frozenset(errors), "; ".join(v.msg for v in result.violations))


def compare(profile: str, oracle: Decision, policy: Decision, deviations: list[Deviation]) -> Verdict:
    if oracle.schema_rejected:
        return Verdict(profile, oracle, policy, [], skipped=True)
    differences = [Difference("oracle", e) for e in sorted(oracle.errors - policy.errors)]
    differences += [Difference("policy", e) for e in sorted(policy.errors - oracle.errors)]
    if oracle.allowed != policy.allowed and not differences:
        side = "policy" if oracle.allowed else "oracle"
        differences.append(Difference(side, ("", "", "decision differs with the same field errors")))
    verdict = Verdict(profile, oracle, policy, differences)
    for difference in differences:
        for deviation in deviations:
            if deviation.matches(profile, difference, oracle, policy):
                verdict.explained[difference] = deviation.id
                break
    return verdict


class Differential:
    """One profile: its oracle process and its policy runner, kept for many requests."""

    def __init__(self, profile: str, tag: str):
        from kubeflow_trainer_policy.cli.review_command import profile_files
        from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
        from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner

        self.profile = profile
        self.oracle = Oracle(tag)
        self.runner = GatekeeperRunner(load_policy_set(profile_files(profile)))

    def judge(self, review: dict[str, Any], objects: list[dict[str, Any]], deviations: list[Deviation]) -> Verdict:
        oracle = self.oracle.decide(review, objects)
        # Gatekeeper, like every validating webhook, gets the object after the API server applied the CRD's
        # defaults: the policies judge the oracle's defaulted objects.
        defaulted = {**review, "request": {**review["request"], **(oracle.defaulted or {})}}
        policy = policy_decision(self.runner, defaulted, objects)
        return compare(self.profile, oracle, policy, deviations)

    def close(self) -> None:
        self.oracle.close()
        self.runner.close()


def write_case(folder: Path, verdict: Verdict, review: dict[str, Any], objects: list[dict[str, Any]]) -> Path:
    """One disagreement as a JSON file named by its content (the same request found twice is one file)."""
    body = {
        "profile": verdict.profile,
        "review": review,
        "objects": objects,
        "oracle": verdict.oracle.as_json(),
        "policy": verdict.policy.as_json(),
        "differences": [
            {**d.as_json(), "deviation": verdict.explained.get(d, "UNEXPLAINED")} for d in verdict.differences
        ],
    }
    text = json.dumps(body, indent=1, sort_keys=True)
    name = f"{verdict.profile}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
    return path
