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
- imports come first, in one sorted group (writeImports sorts a group), then a blank line (writeImports);
  a blank line after the package (writePackage);
- a blank line after a default rule and between a rule and a comment below it (writeRules: only adjacent
  groupableOneLiner rules stay together), between two METADATA blocks (writeComments);
- an `else` that starts a line follows a blank line, an `else` after a one-line `if` is moved to a line of
  its own (writeElse: `} else` stays inline only after a closing brace);
- no `:= true` before `if` (writeHead elides a true value when the rule has a body), `:=` in every head
  (writeHead, Rego v1), no body that is only `true` (writeRule: isExpandedConst), no one-line `if { x }`
  (writeRule prints `if x`);
- a multi-line collection or call has its entries below the bracket (writeIterable: startMultilineSeq);
- one space around infix operators and after an object key's colon (writeFunctionCall, writeCall,
  objectWriter), never two spaces between tokens, exactly one before an end-of-line comment (endLine),
  `# ` after the hash (Regal's no-whitespace-comment: opa fmt keeps a comment's text as written);
- `x["key"]` is written `x.key` when key is a var name and not a keyword (writeRefStringPath);
- parentheses of nested infix calls exactly where the formatter prints them (parens.py: writeCall,
  writeInOperator, objectWriter, listWriter, writeComprehension);
- METADATA annotations on the package of every module and on every `violation` rule of an entry module.

Strings are never re-quoted by the formatter (writeTermParens writes a string term's source text), so
string contents are not checked; strict mode is checked on OPA's AST in strict.py.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from kubeflow_trainer_policy.lint.parens import check_lines

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


@functools.lru_cache(maxsize=1 << 16)
def code_of(line: str) -> str:
    """The line with string contents blanked (quotes kept) and any comment removed. Cached: each module's
    checks ask for a line's code several times, and generated modules repeat many lines."""
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
        elif not stripped and len(indent) != depth:  # a comment line: insertComments writes it at the level inside
            problem(number, f"indentation {indent!r}: `opa fmt` indents this comment by {depth} tabs")
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
            if stripped.endswith(","):
                problem(number, "`opa fmt` puts a multi-line collection's entries below its bracket (writeIterable)")
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
        for message in _formatter_rules(line, code, top=depth == 0, closes_to_top=bool(closed) and not indents):
            problem(number, message)
        if depth == 0 and not stripped and line.startswith("#") and number > 1:
            above = lines[number - 2]
            if above.strip() and not above.startswith("#") and not above.startswith("package "):
                problem(number, "`opa fmt` puts a blank line between a rule and the comment below it (writeRules)")
        if depth == 0 and stripped and number > 1 and not stripped.startswith(("import ", "package ", "else")):
            above = code_of(lines[number - 2]).strip()
            if above.startswith(("default ", "else ")) and not lines[number - 2].startswith("\t"):
                problem(number, "`opa fmt` puts a blank line after a default rule or an else chain (writeRules)")
        if stripped.startswith("else"):
            j = number - 2
            while j >= 0 and lines[j].lstrip().startswith("#"):
                j -= 1
            if j >= 0 and lines[j].strip():
                problem(number, "`opa fmt` puts a blank line before an `else` that starts a line (writeElse)")
        if line.startswith("package ") and number < len(lines) and lines[number].strip():
            problem(number + 1, "`opa fmt` puts a blank line after the package (writePackage)")
        following = lines[number] if number < len(lines) else ""
        if line.startswith("import ") and following.strip() and not following.startswith("import "):
            problem(number + 1, "`opa fmt` puts a blank line after the imports (writeImports)")
        if line.strip() == "# METADATA" and number > 1 and _in_metadata_block(lines, number - 2):
            problem(number, "`opa fmt` separates two METADATA blocks with a blank line (writeComments)")
        previous_was_block_end = not indents and stripped.startswith(tuple(CLOSERS))
        previous_code = code
    for index, line in enumerate(lines):
        code = code_of(line).strip()
        single_true = code.endswith("if {") and len(lines) > index + 2 and code_of(lines[index + 1]).strip() == "true"
        if (single_true and code_of(lines[index + 2]).strip() == "}") or re.search(r"\bif true$", code):
            message = "`opa fmt` drops a rule body that is only `true` (writeRule: isExpandedConst)"
            problem(index + 1, message)
    for number, message in check_lines([code_of(line) for line in lines]):
        problem(number, message)
    if imports != sorted(imports):
        problem(1, "imports must be sorted (opa fmt sorts them)")
    if not test:
        problems += _metadata(path, lines, entry)
    return problems


KEYWORDS = frozenset(
    {"as", "contains", "default", "else", "every", "false", "if", "import", "in", "not", "null", "package"}
    | {"some", "true", "with"}
)
"""ast.KeywordsV1: a ref string that is one of these stays bracketed (`x["in"]`)."""
_OPERATOR = re.compile(r":=|==|!=|<=|>=|[=<>+*/%&|]")
_REF_STRING = re.compile(r"(?<=[\w\])])\[\"(_*)\"\]")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def comment_start(line: str) -> int | None:
    """Index of the `#` that starts the line's comment, if any."""
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


def _formatter_rules(line: str, code: str, *, top: bool, closes_to_top: bool) -> list[str]:
    """What `opa fmt` would change on this one line (strings and comments aside)."""
    found = []
    stripped = code.strip()
    start = comment_start(line)
    if start is not None:
        text = line[start + 1 :]
        if text and not text.startswith((" ", "#")):
            found.append("a comment starts with `# ` (Regal no-whitespace-comment; opa fmt keeps it as written)")
        before = line[:start]
        if before.strip() and (not before.endswith(" ") or before.endswith("  ")):
            found.append("`opa fmt` puts exactly one space before a comment at the end of a line (endLine)")
    if "  " in stripped:
        found.append("`opa fmt` writes one space between tokens")
    for match in _OPERATOR.finditer(stripped):
        i, j = match.start(), match.end()
        spaced_before = i > 0 and stripped[i - 1] == " "
        spaced_after = j == len(stripped) or stripped[j] == " "
        if match.group(0) == "|" and j == len(stripped):
            spaced_after = True
        if not (spaced_before and spaced_after):
            found.append(f"`opa fmt` writes `{match.group(0)}` with one space on each side")
            break
    if re.search(r"\s;|;(?!\s)", stripped):
        found.append("`opa fmt` joins a one-line comprehension body with `; ` (writeComprehensionBody)")
    if re.search(r"\s:(?!=)|:(?![=\s])", stripped) and not stripped.endswith(":"):
        found.append("`opa fmt` writes an object entry as `key: value` (writeObject)")
    for match in _REF_STRING.finditer(code):
        key = line[match.start(1) : match.end(1)]
        if _VAR.fullmatch(key) and key not in KEYWORDS:
            found.append(f'`opa fmt` writes the ref ["{key}"] as .{key} (writeRefStringPath)')
        elif _go_quote(json.loads(f'"{key}"')) != f'"{key}"':
            quoted = _go_quote(json.loads(f'"{key}"'))
            found.append(f'`opa fmt` writes the ref ["{key}"] as [{quoted}] (writeRefStringPath: strconv.Quote)')
    if (top or closes_to_top) and re.search(r"\belse\b", stripped) and not re.match(r"(?:}\s*)?else\b", stripped):
        found.append("`opa fmt` moves an `else` after a one-line `if` to a line of its own (writeElse)")
    if (top or closes_to_top) and re.search(r"(?:^|\s|\))(?::=|=) true if\b", stripped):
        found.append("`opa fmt` drops `:= true` before `if` (writeHead elides a true value of a rule with a body)")
    if (top or closes_to_top) and re.search(r"\bif \{.*\}$", stripped):
        found.append("`opa fmt` writes a one-line body as `if <expression>` or as a block (writeRule)")
    head = re.sub(r"^}\s*", "", stripped) if closes_to_top else stripped if top else ""
    if re.match(r"(?:default\s+)?(?:else|[A-Za-z_][\w.]*(?:\[[^\]]*\]|\([^)]*\))?)\s=\s", head):
        found.append("`opa fmt` writes `:=` in a rule head (writeHead, Rego v1)")
    return found


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _go_quote(value: str) -> str:
    r"""Go's strconv.Quote, which ast.String.String() uses: printable characters as they are, `\"` and `\\`,
    the C escapes, then \xNN below 0x80 and \uNNNN or \UNNNNNNNN above."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def _in_metadata_block(lines: list[str], index: int) -> bool:
    """Whether lines[index] is a comment line of a block that starts with `# METADATA`."""
    while index >= 0 and lines[index].startswith("#"):
        if lines[index].strip() == "# METADATA":
            return True
        index -= 1
    return False


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
