"""Gatekeeper's recorded behaviour as test data: one folder per case under cases/.

A case folder holds what real Gatekeeper was given (`template.yaml`, `constraint.yaml`,
`review.yaml`: a bare object or an AdmissionReview, `inventory.yaml`: the objects it had synced) and
`recorded.json`, what it did: `{"recordedWith", "violations": [<message, decoded when JSON>],
"error": "<Gatekeeper's error>", "errorClass": "<the phrase our error must carry>"}`.

When Gatekeeper moves, record again with gator and re-import:
`python -m tests.gatekeeper.conformance.recordings <recorded folder>` (the layout of a folder per
case with template.yaml, constraint.yaml, object.yaml, inventory-N.yaml, expected.json and an
index.json carrying `recorded_with`).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).resolve().parent / "cases"

ERROR_CLASSES = {
    "rego_parse_error": "rego_parse_error",
    "undefined function external_data": "undefined function external_data",
    "invalid data references": "invalid data reference",
    "namespace selector for namespace-scoped object but missing Namespace": "but missing Namespace",
}
"""A phrase of Gatekeeper's error -> the phrase this project's error must carry for the same failure."""


@dataclass(frozen=True)
class RecordedCase:
    name: str
    folder: Path
    recorded: dict[str, Any]

    @property
    def error_class(self) -> str | None:
        return self.recorded.get("errorClass")

    @property
    def violations(self) -> list[Any]:
        return self.recorded.get("violations", [])


def load_cases() -> list[RecordedCase]:
    return [
        RecordedCase(folder.name, folder, json.loads((folder / "recorded.json").read_text(encoding="utf-8")))
        for folder in sorted(CASES_DIR.iterdir())
        if (folder / "recorded.json").is_file()
    ]


def error_class(error: str) -> str:
    for phrase, ours in ERROR_CLASSES.items():
        if phrase in error:
            return ours
    raise ValueError(f"unknown Gatekeeper error class, add it to ERROR_CLASSES: {error}")


def import_recordings(source: Path, target: Path = CASES_DIR) -> int:
    """Replace cases/ with the recordings in `source`; returns the number of cases."""
    index = json.loads((source / "index.json").read_text(encoding="utf-8"))
    recorded_with = index["recorded_with"]
    staging = target.with_name(target.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    for name, summary in sorted(index["cases"].items()):
        src, dst = source / name, staging / name
        dst.mkdir(parents=True)
        for file, as_name in (("template.yaml", "template.yaml"), ("constraint.yaml", "constraint.yaml")):
            shutil.copyfile(src / file, dst / as_name)
        shutil.copyfile(src / "object.yaml", dst / "review.yaml")
        inventory = sorted(src.glob("inventory-*.yaml"), key=lambda p: int(p.stem.rpartition("-")[2]))
        if inventory:
            texts = [p.read_text(encoding="utf-8").strip() for p in inventory]
            (dst / "inventory.yaml").write_text("\n---\n".join(texts) + "\n", encoding="utf-8")
        expected = json.loads((src / "expected.json").read_text(encoding="utf-8"))
        recorded: dict[str, Any] = {"recordedWith": recorded_with}
        if "error" in summary:
            recorded["error"] = summary["error"]
            recorded["errorClass"] = error_class(summary["error"])
        else:
            recorded["violations"] = expected.get("messages", [])
            assert len(recorded["violations"]) == summary["violations"], name
        (dst / "recorded.json").write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return len(index["cases"])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.gatekeeper.conformance.recordings RECORDED_FOLDER")
    print(f"{import_recordings(Path(sys.argv[1]))} cases imported into {CASES_DIR}")
