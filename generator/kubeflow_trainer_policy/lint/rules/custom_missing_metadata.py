"""custom/missing-metadata: every package, and every `violation` rule of a rule's entry module, has a METADATA
block (Regal's custom/missing-metadata, limited to what the docs and Gatekeeper's users read: the package's
title and description, and what each violation rule reports). OPA parses the blocks (`opa check`)."""

from __future__ import annotations

from kubeflow_trainer_policy.lint.modules import Module
from kubeflow_trainer_policy.lint.rules import Violation

RULE = "custom/missing-metadata"


def _annotated(lines: list[str], index: int) -> bool:
    """Whether the comment block right above lines[index] is a METADATA block."""
    j = index - 1
    while j >= 0 and lines[j].startswith("#"):
        if lines[j].strip() == "# METADATA":
            return True
        j -= 1
    return False


def check(module: Module) -> list[Violation]:
    if module.test:
        return []
    lines = module.text.splitlines()
    found = []
    for index, line in enumerate(lines):
        if line.startswith("package ") and not _annotated(lines, index):
            found.append(
                Violation(module.path, index + 1, RULE, "the package needs a METADATA block (title, description)")
            )
        if module.entry and line.startswith("violation contains ") and not _annotated(lines, index):
            message = "every violation rule needs a METADATA block (title, description)"
            found.append(Violation(module.path, index + 1, RULE, message))
    return found
