"""Template versions: a template whose content changed must carry a new metadata.gatekeeper.sh/version.

catalog/template_versions.json records, per rule, the version and a digest of every profile's template
content. It is generated like everything else; generating refuses a content change without a
version bump (gatekeeper-library's convention), so `--check` catches a forgotten bump.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.profiles import Profile
from kubeflow_trainer_policy.render.gatekeeper import constraint_template
from kubeflow_trainer_policy.render.header import header

LOCK = "generator/kubeflow_trainer_policy/catalog/template_versions.json"


def digest(rule: Rule, profile: Profile) -> str:
    spec = constraint_template(rule, profile)["spec"]
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def lock(rules: list[Rule], profiles: list[Profile]) -> dict[str, Any]:
    return {
        rule.id: {"version": rule.version, "digests": {p.name: digest(rule, p) for p in profiles}} for rule in rules
    }


def lock_text(rules: list[Rule], profiles: list[Profile]) -> str:
    note = " ".join(header("policies/").replace("#", "").split())
    return json.dumps({"//": note, **lock(rules, profiles)}, indent=2, sort_keys=True) + "\n"


def unbumped(recorded_path: Path, rules: list[Rule], profiles: list[Profile]) -> list[str]:
    """Rules whose template content changed while their version stayed the same."""
    try:
        recorded = json.loads(recorded_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    problems = []
    for rule_id, entry in lock(rules, profiles).items():
        if not isinstance(recorded, dict):
            break
        old = recorded.get(rule_id)
        if not isinstance(old, dict) or old.get("version") != entry["version"]:
            continue
        old_digests = old.get("digests") or {}
        changed = [p for p, d in entry["digests"].items() if p in old_digests and old_digests[p] != d]
        if changed:
            problems.append(
                f"rule {rule_id}: template content changed ({', '.join(changed)}) but its version is still "
                f"{entry['version']}: bump Rule.version (metadata.gatekeeper.sh/version)"
            )
    return problems
