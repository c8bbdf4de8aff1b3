"""profiles/capabilities.json: the capabilities of the oldest OPA the project holds to (that of the oldest supported
Gatekeeper, tools/versions.json) plus Gatekeeper's external_data builtin, so that `opa test --capabilities` compiles
the rule of the external-data variant beside the others and nothing newer than that OPA slips in.
`python -m kubeflow_trainer_policy.opa.capabilities`
rewrites it; `make build` checks it is current."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.paths import PROFILES_DIR

CAPABILITIES = PROFILES_DIR / "capabilities.json"
EXTERNAL_DATA = {
    "name": "external_data",
    "decl": {"type": "function", "args": [{"type": "any"}], "result": {"type": "any"}},
}
"""Gatekeeper's declaration (frameworks constraint/pkg/client/drivers/rego/builtin.go): one object in, one out."""


def expected(opa: Path | None = None) -> str:
    """`opa capabilities --current` of `opa` (default: the build's, the oldest pinned), with external_data added, as
    the file should read."""
    current = json.loads(run_opa(["capabilities", "--current"], binary=opa).stdout)
    current["builtins"] = sorted([*current["builtins"], EXTERNAL_DATA], key=lambda b: b["name"])
    return _one_entry_per_line(current)


def _one_entry_per_line(capabilities: dict) -> str:
    """The JSON with each builtin on a line of its own (OPA reads any JSON layout; this one reads and diffs)."""
    fields = []
    for key, value in capabilities.items():
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            items = ",\n".join(f"    {json.dumps(item, sort_keys=True)}" for item in value)
            fields.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            fields.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else CAPABILITIES
    path.write_text(expected())
    print(f"{path}: OPA's current capabilities and external_data")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
