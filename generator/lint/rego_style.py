"""The part of `opa fmt` and Regal that can be checked without them, on every emitted Rego module.

Each check restates a rule of OPA's formatter (open-policy-agent/opa v1/format/format.go) or of the
conventions in .regal/config.yaml, on the text alone:

- indentation is tabs, one per open block, collection or call, and one more for `with` modifiers on the
  lines after their expression (writer.indent is "\\t"; writeExpr indents such `with` lines);
- no trailing whitespace, one final newline, never two blank lines in a row, no blank line right after
  an opening bracket or right before a closing one (writeBody, squashTrailingNewlines);
- a multi-line collection or call has a trailing comma after its last entry (writeIterable), a block or
  comprehension body has none;
- a top-level rule after a multi-line rule is separated by a blank line (writeRules);
- no space just inside brackets and a space after every comma (writeIterableLine, writeObject);
- imports come first, in one sorted group (writeImports sorts a group);
- METADATA annotations on the package of every module and on every `violation` rule of an entry module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPENERS = {"{": "}", "[": "]", "(": ")"}
CLOSERS = set(OPENERS.values())
_BODY_OPENER = re.compile(r"(\bif|\belse|^\s*every\b.*|\bnot) \{$")


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def code_of(line: str) -> str:
    """The line with string contents blanked (quotes kept) and any comment removed."""
    out: list[str] = []
    quote = ""
    escaped = False
    for char in line:
        if quote:
            if escaped:
                escaped = False
                out.append("_")
            elif char == "\\" and quote == '"':
                escaped = True
                out.append("_")
            elif char == quote:
                quote = ""
                out.append(char)
            else:
                out.append("_")
        elif char in '"`':
            quote = char
            out.append(char)
        elif char == "#":
            break
        else:
            out.append(char)
    return "".join(out).rstrip()


def _depth_change(code: str) -> tuple[int, int]:
    """(closers at the start of the line, net change of open brackets over the line)."""
    leading = len(code.strip()) - len(code.strip().lstrip("".join(CLOSERS)))
    net = sum(1 for c in code if c in OPENERS) - sum(1 for c in code if c in CLOSERS)
    return leading, net


def check_module(path: str, text: str, *, entry: bool = False, test: bool = False) -> list[Problem]:
    """Problems of one module. `entry`: a rule's entry module (its `violation` rules need METADATA)."""
    problems: list[Problem] = []

    def problem(line: int, message: str) -> None:
        problems.append(Problem(path, line, message))

    if not text.endswith("\n") or text.endswith("\n\n"):
        problem(len(text.splitlines()), "the file must end with exactly one newline")
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    with_level: int | None = None
    stack: list[bool] = []
    """One entry per open bracket: True for a collection or call (its last entry needs a trailing comma)."""
    indents: list[bool] = []
    """One entry per open bracket: whether the lines after it are indented one more level. Only the last
    bracket a line leaves open indents: writeIterable, writeComprehensionBody and writeBody go one level
    up only for a sequence or body that starts on a new line; `f({` or `({...} | {x |` indent once."""
    previous_code = ""
    previous_was_block_end = False
    imports: list[str] = []
    seen_rule = False
    for number, line in enumerate(lines, start=1):
        if line != line.rstrip():
            problem(number, "trailing whitespace")
        if not line.strip():
            if number > 1 and not lines[number - 2].strip():
                problem(number, "two blank lines in a row")
            if previous_code.endswith(("{", "[", "(", "|")):
                problem(number, "blank line right after an opening bracket")
            previous_was_block_end = False
            continue
        indent = line[: len(line) - len(line.lstrip())]
        if " " in indent:
            problem(number, "indentation must be tabs")
        code = code_of(line)
        stripped = code.strip()
        leading, _ = _depth_change(code)
        depth = sum(indents)
        closed = indents[len(indents) - leading :] if leading else []
        del indents[len(indents) - len(closed) :]
        if stripped.startswith("with ") and depth > 0:
            with_level = depth if with_level is None else with_level
        elif depth == (with_level or 0) and not stripped.startswith(tuple(CLOSERS)):
            with_level = None
        expected = depth - sum(closed) + (1 if with_level is not None else 0)
        if stripped and len(indent) != expected:
            problem(number, f"indentation {indent!r}: `opa fmt` indents this line by {expected} tabs")
        if leading and lines[number - 2].strip() == "":
            problem(number, "blank line right before a closing bracket")
        for _ in range(leading):
            if stack and stack.pop() and not previous_code.endswith(","):
                problem(number - 1, "a multi-line collection or call needs a comma after its last entry")
        if not indents and stripped and not stripped.startswith(tuple(CLOSERS)) and previous_was_block_end:
            problem(number, "a blank line must separate this rule from the multi-line rule before it")
        if re.search(r"[\[({] |[^\s] [\])}]|,[^\s]", stripped.replace("{ }", "{}")):
            problem(number, "no space inside brackets, one space after a comma")
        base = len(indents)
        for char in code.strip()[leading:]:
            if char in OPENERS:
                stack.append(False)
                indents.append(False)
            elif char in CLOSERS and stack:
                stack.pop()
                if indents:
                    indents.pop()
                base = min(base, len(indents))
        if len(indents) > base:
            indents[-1] = True
        if stripped.endswith(tuple(OPENERS)) and stack:
            stack[-1] = not _BODY_OPENER.search(stripped)
        elif stripped.endswith("|") and stack:
            stack[-1] = False
        if depth == 0 and not closed and line.startswith("import "):
            if seen_rule:
                problem(number, "imports must come before the rules")
            imports.append(line)
        elif depth == 0 and stripped and not line.startswith("package "):
            seen_rule = True
        previous_was_block_end = not indents and stripped.startswith(tuple(CLOSERS))
        previous_code = code
    if imports != sorted(imports):
        problem(1, "imports must be sorted (opa fmt sorts them)")
    if not test:
        problems += _metadata(path, lines, entry)
    return problems


def _annotated(lines: list[str], index: int) -> bool:
    """Whether the comment block right above lines[index] is a METADATA block."""
    j = index - 1
    while j >= 0 and lines[j].startswith("#"):
        if lines[j].strip() == "# METADATA":
            return True
        j -= 1
    return False


def _metadata(path: str, lines: list[str], entry: bool) -> list[Problem]:
    problems = []
    for index, line in enumerate(lines):
        if line.startswith("package ") and not _annotated(lines, index):
            problems.append(Problem(path, index + 1, "the package needs a METADATA block (title, description)"))
        if entry and line.startswith("violation contains ") and not _annotated(lines, index):
            message = "every violation rule needs a METADATA block (title, description)"
            problems.append(Problem(path, index + 1, message))
    return problems
