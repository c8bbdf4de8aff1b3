"""style/no-whitespace-comment: a comment starts with `# ` (Regal's rule of that id; `opa fmt` keeps a comment's
text as written). `##...` lines are allowed."""

from __future__ import annotations

from kubeflow_trainer_policy.lint.modules import Module
from kubeflow_trainer_policy.lint.rules import Violation

RULE = "style/no-whitespace-comment"


def comment_start(line: str) -> int | None:
    """Index of the `#` that starts the line's comment (outside strings), if any."""
    quote, escaped = "", False
    for i, char in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in '"`':
            quote = char
        elif char == "#":
            return i
    return None


def check(module: Module) -> list[Violation]:
    found = []
    for number, line in enumerate(module.text.splitlines(), start=1):
        start = comment_start(line)
        text = line[start + 1 :] if start is not None else ""
        if text and not text.startswith((" ", "#")):
            found.append(Violation(module.path, number, RULE, "a comment starts with `# `"))
    return found
