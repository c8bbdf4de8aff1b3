"""Where `opa fmt` puts parentheses around infix calls (open-policy-agent/opa v1/format/format.go).

The formatter never keeps the parentheses of the source: it prints an infix call (`a + b`, `s | t`, `x in
y`...) from the AST, and the AST holds no parentheses. What it writes:

- writeFunctionCall prints an expression's own operator (`x := a + b`, `a + b == c`) with both operands
  through writeTerm, so an operand that is an infix call gets no parentheses;
- writeCall prints every other infix call, and its operands through writeTermParens(true, ...), so an
  operand that is itself an infix call is parenthesized: `x := (a | b) | c`, `a + (b * c)`, `f((a + b) / 2)`;
- writeInOperator prints the operands of `in` through writeTermParens(true, ...) even at expression level:
  `x in (a | b)`, `some x in (a | b)`;
- objectWriter and listWriter(true) parenthesize a union (`|`) that is an object key or value or an array
  or set element, where `|` would read as a comprehension: `{"k": (a | b)}`, `[(a | b)]`; a call argument
  keeps the parentheses it had (listWriter(false)).

The parser reads `a | b | c` as `(a | b) | c` (left-associative) with the precedence of parseTermIn >
parseTermRelation > parseTermOr > parseTermAnd > parseTermArith > parseTermFactor, lowest first.

This module checks, on the text of one module (strings blanked, comments removed, as rego_style.code_of
gives it), that every infix call is parenthesized exactly where the formatter would print parentheses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PRECEDENCE = {
    ":=": 0,
    "=": 0,
    "contains": 0,
    "in": 1,
    "==": 2,
    "!=": 2,
    "<": 2,
    "<=": 2,
    ">": 2,
    ">=": 2,
    "|": 3,
    "&": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}
_TOKEN = re.compile(r":=|==|!=|<=|>=|[<>=|&+*/%]|-(?=\s)|\bin\b(?!\()|\bcontains\b(?!\()")
_KEYWORDS = re.compile(r"^(?:some|every|not|default)\s+")
_SPLITTERS = re.compile(r"\b(?:if|else|with|as)\b")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}

EXPR = "expression"
"""A body expression or a rule head: its root call's operands are printed without parentheses."""
ELEM = "term"
"""A term inside another (argument, ref index, `with` value...): operands of its root call get parentheses."""
COLL = "collection entry"
"""An array/set element or object key/value: like ELEM, and a root union is parenthesized too."""
ARG = "call argument"
"""Like ELEM; a root union keeps whatever parentheses it had."""
TERM = "comprehension term"
"""A comprehension's term (or object comprehension key): a root union is parenthesized (writeComprehension,
writeObjectComprehension), another root call keeps the parentheses it had."""
SOME = "some"
"""`some x in xs`: `in` parenthesizes its operands."""


@dataclass
class Node:
    op: str | None
    """None for an operand that is not an infix call."""
    children: list[Node] = field(default_factory=list)
    parens: bool = False


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing text[start], or len(text)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def split_top(text: str, separators: str) -> list[str]:
    """text split at the characters of `separators` that are outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0 and char in separators:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _top_level_pipe(text: str) -> int:
    """Index of the first ` | ` outside brackets (a comprehension's bar), or -1."""
    depth = 0
    for i, char in enumerate(text):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0 and char == "|":
            return i
    return -1


class ParenChecker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    # --- groups ---------------------------------------------------------------------------------------
    def group(self, opener: str, inner: str, before: str) -> None:
        """Check a bracketed group met inside a segment (its own contents, by what the brackets are)."""
        call_or_ref = bool(re.search(r"[\w.\])\"]$", before))
        if opener == "(":
            if call_or_ref:
                for part in split_top(inner, ","):
                    self.segment(part, ARG)
            else:
                self.segment(inner, ELEM)  # a parenthesized operand: the caller judged the parentheses
        elif opener == "[" and call_or_ref:
            self.segment(inner, ELEM)
        else:
            self.literal(opener, inner)

    def literal(self, opener: str, inner: str) -> None:
        bar = _top_level_pipe(inner)
        if bar >= 0 and len(split_top(inner[:bar], ",")) == 1:  # a comprehension: term | body
            for part in split_top(inner[:bar], ":"):
                self.segment(part, TERM)
            for part in split_top(inner[bar + 1 :], ";"):
                self.segment(part, EXPR)
            return
        for entry in split_top(inner, ","):
            for part in split_top(entry, ":") if opener == "{" else [entry]:
                self.segment(part, COLL)

    # --- segments -------------------------------------------------------------------------------------
    def segment(self, text: str, kind: str) -> None:
        """Check one expression or term (no top-level commas); nested groups are checked on the way."""
        text = text.strip()
        if not text:
            return
        pieces = _SPLITTERS.split(text)
        if len(pieces) > 1 and _balanced(pieces):
            first, *rest = pieces
            self.segment(first, kind)
            for piece in rest:
                self.segment(piece, ELEM if kind != EXPR else EXPR)
            return
        match = _KEYWORDS.match(text)
        if match:
            keyword = match.group(0).strip()
            text = text[match.end() :]
            if keyword == "some":
                for part in split_top(text, ","):
                    self.segment(part, SOME)
                return
            if keyword == "every":  # writeEvery writes the domain with writeTerm: a root call has no parentheses
                domain = re.split(r"\bin\b", split_top(text, ",")[-1], maxsplit=1)[-1]
                body = _last_top_level(domain, "{")
                if body >= 0:
                    self.segment(domain[body + 1 : _matching(domain, body)], EXPR)
                    domain = domain[:body]
                self.segment(domain, ELEM)
                return
        node = self.parse(text)
        if node is None:
            return
        self.judge(node, kind, root=True)

    def parse(self, text: str) -> Node | None:
        """The infix tree of text (left-associative, by PRECEDENCE); nested groups are checked meanwhile."""
        items: list[Node | str] = []
        i = 0
        expect_operand = True
        while i < len(text):
            char = text[i]
            if char.isspace():
                i += 1
                continue
            match = _TOKEN.match(text, i)
            if match and not (expect_operand and match.group(0) == "-") and not _in_word(text, i):
                if expect_operand:
                    items.append(Node(None))
                items.append(match.group(0))
                expect_operand = True
                i = match.end()
                continue
            # an operand: everything up to the next top-level operator
            start = i
            while i < len(text):
                if text[i] in _OPEN:
                    end = _matching(text, i)
                    self.group(text[i], text[i + 1 : end], text[start:i])
                    i = end + 1
                    continue
                if text[i].isspace():
                    ahead = _TOKEN.match(text, i + 1)
                    if ahead and not _in_word(text, i + 1):
                        break
                i += 1
            operand = text[start:i].strip()
            items.append(self.operand(operand))
            expect_operand = False
        if len(items) == 1:
            return None if isinstance(items[0], Node) and items[0].op is None else items[0]  # type: ignore[return-value]
        if not items:
            return None
        if isinstance(items[-1], str):
            items.append(Node(None))
        return _climb(items)

    def operand(self, text: str) -> Node:
        if text.startswith("(") and _matching(text, 0) == len(text) - 1:
            inner = self.parse(text[1:-1])
            if inner is not None and inner.op is not None:
                inner.parens = True
                return inner
        return Node(None)

    # --- the formatter's rules ------------------------------------------------------------------------
    def judge(self, node: Node, kind: str, root: bool) -> None:
        if node.op is None:
            return
        if root:
            expected: bool | None = False
            if node.op == "|" and kind in (COLL, TERM):
                expected = True
            elif kind == TERM or (node.op == "|" and kind == ARG):
                expected = None
        else:
            expected = True
        if expected is not None and node.parens != expected:
            shown = _show(node)
            if expected:
                self.problems.append(f"`opa fmt` parenthesizes the nested infix call {shown}")
            else:
                self.problems.append(f"`opa fmt` prints {shown} without parentheses")
        children_root_level = root and kind == EXPR and node.op != "in"
        for child in node.children:
            if child.op is None:
                continue
            if children_root_level:
                if child.parens:
                    self.problems.append(f"`opa fmt` prints {_show(child)} without parentheses")
                for grandchild in child.children:
                    self.judge(grandchild, kind, root=False)
            else:
                self.judge(child, kind, root=False)


def _last_top_level(text: str, char: str) -> int:
    """Index of the last `char` outside brackets (an opening bracket itself counts), or -1."""
    depth, found = 0, -1
    for i, c in enumerate(text):
        if c == char and depth == 0:
            found = i
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
    return found


def _in_word(text: str, i: int) -> bool:
    """Whether a keyword-like operator at i is part of a longer name (`index`, `contains_x`, `x.in`)."""
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_.")


def _balanced(pieces: list[str]) -> bool:
    return all(sum(p.count(o) for o in _OPEN) == sum(p.count(c) for c in _CLOSE) for p in pieces)


def _climb(items: list[Node | str]) -> Node:
    """Precedence climbing over operand, operator, operand, ... (all operators left-associative)."""
    position = 0

    def parse(min_precedence: int) -> Node:
        nonlocal position
        left = items[position]
        position += 1
        assert isinstance(left, Node)
        while position < len(items):
            op = items[position]
            assert isinstance(op, str)
            precedence = PRECEDENCE[op]
            if precedence < min_precedence:
                break
            position += 1
            right = parse(precedence + 1)
            left = Node(op, [left, right])
        return left

    return parse(0)


def _show(node: Node) -> str:
    def text(n: Node) -> str:
        if n.op is None:
            return "_"
        inner = f"{text(n.children[0])} {n.op} {text(n.children[1])}"
        return f"({inner})" if n.parens else inner

    return f"`{text(node)}`"


_BODY_BEFORE = re.compile(r"(?:\b(?:if|else|not)|^\s*every\b.*)\s*$")


def check_lines(code_lines: list[str]) -> list[tuple[int, str]]:
    """(line number, problem) for a module's code lines (rego_style.code_of of each line)."""
    found: list[tuple[int, str]] = []
    stack: list[str] = []
    """Kinds of the brackets left open by earlier lines: body, coll, call, ref, paren."""
    for number, code in enumerate(code_lines, start=1):
        text = code.strip()
        while text and text[0] in _CLOSE:
            if stack:
                stack.pop()
            text = text[1:].lstrip()
        context = stack[-1] if stack else "body"
        local: list[int] = []
        for i, char in enumerate(text):
            if char in _OPEN:
                local.append(i)
            elif char in _CLOSE:
                if local:
                    local.pop()
                elif stack:
                    stack.pop()
        balanced = text + "".join(_OPEN[text[i]] for i in reversed(local))
        checker = ParenChecker()
        if context == "body":
            checker.segment(balanced, EXPR)
        elif context == "coll":
            for entry in split_top(balanced, ","):
                for part in split_top(entry, ":"):
                    checker.segment(part, COLL)
        elif context == "call":
            for part in split_top(balanced, ","):
                checker.segment(part, ARG)
        else:
            checker.segment(balanced, ELEM)
        found += [(number, problem) for problem in checker.problems]
        for k, i in enumerate(local):
            before = text[:i]
            inner = text[i + 1 : local[k + 1] if k + 1 < len(local) else len(text)]
            char = text[i]
            if char == "{" and _BODY_BEFORE.search(before):
                stack.append("body")
            elif char == "(":
                stack.append("call" if re.search(r"[\w.]$", before) else "paren")
            elif char == "[" and re.search(r"[\w\])]$", before):
                stack.append("ref")
            elif _top_level_pipe(inner) >= 0 and len(split_top(inner[: _top_level_pipe(inner)], ",")) == 1:
                stack.append("body")
            else:
                stack.append("coll")
    return found
