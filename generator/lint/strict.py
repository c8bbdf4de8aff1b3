"""OPA's strict-mode checks (`opa check --strict`, the compiler's WithStrict), on the AST that OPA's own parser
gives (`rego.parse_module`), for the emitted modules.

The checks of OPA's "Strict mode" table (docs/policy-language, "Strict mode"):
- duplicate imports: two imports bound to one name;
- unused imports: an import whose name no rule refers to;
- unused local assignments: a variable assigned with `:=` in a rule, function or comprehension body and
  never used (the compiler's rewriteLocalVars reports "assigned var x unused");
- unused function arguments: a named argument the function never uses ("unused argument x. (hint: use _
  (wildcard variable) instead)");
- `input` and `data` as the name of a rule, function argument or assigned variable;
- deprecated built-ins: any, all, re_match, net.cidr_overlap, set_diff and the cast_* functions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

DEPRECATED = frozenset(
    {
        "any",
        "all",
        "re_match",
        "net.cidr_overlap",
        "set_diff",
        "cast_array",
        "cast_set",
        "cast_string",
        "cast_boolean",
        "cast_null",
        "cast_object",
    }
)
RESERVED = frozenset({"input", "data"})


def _terms(node: Any) -> Iterator[dict[str, Any]]:
    """Every term ({"type", "value"}) inside node, node included, in document order. A stack, not recursive
    generators: those cost one generator frame per level for every node (most of the lint's time)."""
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "type" in value and "value" in value:
                yield value
            stack.extend(reversed(value.values()))
        elif isinstance(value, list):
            stack.extend(reversed(value))


def _vars(node: Any) -> Iterator[str]:
    for term in _terms(node):
        if term["type"] == "var" and not term["value"].startswith("$"):
            yield term["value"]


def _ref_name(term: dict[str, Any]) -> str:
    parts = []
    for i, part in enumerate(term["value"]):
        if (i == 0 and part["type"] != "var") or (i > 0 and part["type"] != "string"):
            break
        parts.append(part["value"])
    return ".".join(parts)


def _operator(expr: dict[str, Any]) -> str | None:
    terms = expr.get("terms")
    if isinstance(terms, list) and terms and terms[0]["type"] == "ref":
        return _ref_name(terms[0])
    return None


def _bodies(node: Any) -> Iterator[tuple[list[dict[str, Any]], Any]]:
    """(body, scope) for every body in node not under an `else`: a comprehension's or `every`'s body has
    that comprehension or `every` as its scope; `node` itself is the scope of its own `body`."""

    def walk(value: Any, scope: Any) -> Iterator[tuple[list[dict[str, Any]], Any]]:
        if isinstance(value, dict):
            if value.get("type") in ("arraycomprehension", "setcomprehension", "objectcomprehension"):
                inner = value["value"]
                yield inner["body"], inner
                yield from walk(inner, inner)
                return
            if "domain" in value and "body" in value:  # every
                yield value["body"], value
                yield from walk({k: v for k, v in value.items() if k != "body"}, scope)
                yield from walk(value["body"], value)
                return
            for key, item in value.items():
                if key != "else":
                    yield from walk(item, scope)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item, scope)

    if "body" in node:
        yield node["body"], node
    yield from walk({k: v for k, v in node.items() if k != "body"}, node)
    yield from walk(node.get("body", []), node)


def _rule_nodes(rule: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A rule and each of its `else` branches (the compiler checks each branch as a rule of its own)."""
    node: dict[str, Any] | None = rule
    while node is not None:
        yield {k: v for k, v in node.items() if k != "else"}
        node = node.get("else")


def strict_problems(module: dict[str, Any]) -> list[str]:
    """What OPA's strict mode reports on one parsed module (rego.parse_module's value)."""
    problems: list[str] = []
    rules = module.get("rules", [])
    used = Counter(_vars(rules))
    names: Counter[str] = Counter()
    for imp in module.get("imports", []):
        path = imp["path"]["value"]
        name = imp.get("alias") or (path[-1]["value"] if len(path) > 1 else path[0]["value"])
        names[name] += 1
        if names[name] == 2:
            problems.append(f"duplicate import of {name}")
        if not used[name]:
            problems.append(f"unused import {_ref_name(imp['path'])} (strict mode: unused imports)")
    for rule in rules:
        problems += _argument_problems(rule)
        for node in _rule_nodes(rule):
            problems += _rule_problems(node)
    return problems


def _name(head: dict[str, Any]) -> str:
    return ".".join(str(p["value"]) for p in head.get("ref", [])) or head.get("name", "")


def _argument_problems(rule: dict[str, Any]) -> list[str]:
    """A function argument is used when any branch of the rule's else chain uses it (rewriteLocalVars
    collects the unused arguments across a rule's else branches before it reports them)."""
    problems = []
    head = rule["head"]
    args = head.get("args") or []
    branch_vars = [Counter(_vars(branch)) for branch in _rule_nodes(rule)] if args else []
    for arg in args:
        for name in _vars(arg):
            if name in RESERVED:
                problems.append(f"{_name(head)}: argument `{name}` is reserved (strict mode)")
            elif all(counts[name] < 2 for counts in branch_vars):
                problems.append(f"{_name(head)}: unused argument {name} (strict mode; use _)")
    return problems


def _rule_problems(node: dict[str, Any]) -> list[str]:
    problems = []
    head = node["head"]
    rule_name = _name(head)
    if head.get("name") in RESERVED:
        problems.append(f"rule {rule_name}: `{head['name']}` is reserved (strict mode)")
    for body, scope in _bodies(node):
        in_scope = Counter(_vars(scope))
        for expr in body:
            operator = _operator(expr)
            if operator in DEPRECATED:
                problems.append(f"{rule_name}: deprecated built-in {operator} (strict mode)")
            if operator != "assign":
                continue
            for name in _vars(expr["terms"][1]):
                if name in RESERVED:
                    problems.append(f"{rule_name}: assigns to reserved `{name}` (strict mode)")
                elif in_scope[name] < 2:
                    problems.append(f"{rule_name}: assigned var {name} unused (strict mode)")
    for term in _terms(node):
        if term["type"] == "call" and _ref_name(term["value"][0]) in DEPRECATED:
            problems.append(f"{rule_name}: deprecated built-in {_ref_name(term['value'][0])} (strict mode)")
    return problems
