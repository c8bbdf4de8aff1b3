"""Deterministic YAML text: literal block scalars for multi-line strings, keys in the order given.

PyYAML will not emit a block scalar for a string that holds a tab (and Rego as `opa fmt` prints it is
indented with tabs): it falls back to a quoted scalar with escapes. So multi-line strings are swapped for
placeholders, PyYAML dumps the rest, and each placeholder becomes a literal block scalar (`|`, `|-` or
`|+`) written here, line for line the string's own text. Parsing the YAML back gives the same value.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_TOKEN = "TRAINER_POLICY_BLOCK_{}"
_TOKEN_LINE = re.compile(r"^(?P<indent> *)(?P<dashes>(?:- )*)(?P<key>.*?)TRAINER_POLICY_BLOCK_(?P<n>\d+)$")


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter when PyYAML has it (its wheels do): the pure-Python one was most of `generate`'s time.
    Both write the same text for what is generated here (`generate --check` compares it)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def block_scalar_fits(value: str) -> bool:
    """Whether a literal block scalar carries the string exactly: printable text, no carriage returns, no
    whitespace-only lines (a block scalar cannot tell those from blank lines), text before the last newline."""
    if "\n" not in value or any(c in value for c in "\r\x85\u2028\u2029\ufeff"):
        return False
    if any(not c.isprintable() and c not in "\n\t" for c in value):
        return False
    body = value.rstrip("\n")
    if not body:
        return False
    return all(line == "" or line.strip() != "" for line in body.split("\n"))


def block_scalar(value: str, indent: int) -> str:
    """The header (`|`, `|-`, `|+`, with an indentation indicator when the first non-empty line starts with a
    space, since YAML takes the content's indentation from that line) and the lines of a literal block scalar
    whose content is indented by `indent` spaces."""
    body = value.rstrip("\n")
    trailing = len(value) - len(body)
    chomping = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    first_text_line = next(line for line in body.split("\n") if line)
    indicator = "2" if first_text_line.startswith(" ") else ""
    lines = [(" " * indent + line) if line else "" for line in body.split("\n")]
    lines += [""] * (trailing - 1)
    return f"|{indicator}{chomping}\n" + "\n".join(lines)


def _swap(value: Any, blocks: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: _swap(v, blocks) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, blocks) for v in value]
    if isinstance(value, str) and block_scalar_fits(value):
        blocks.append(value)
        return _TOKEN.format(len(blocks) - 1)
    return value


def _unswap(text: str, blocks: list[str]) -> str:
    out = []
    for line in text.split("\n"):
        match = _TOKEN_LINE.match(line)
        if match is None:
            out.append(line)
            continue
        node_column = len(match["indent"]) + len(match["dashes"])
        if not match["key"] and match["dashes"]:
            node_column -= 2  # a sequence entry: its content is indented from the dash
        block = blocks[int(match["n"])]
        out.append(line[: match.start("n") - len("TRAINER_POLICY_BLOCK_")] + block_scalar(block, node_column + 2))
    return "\n".join(out)


def _dump(values: list[Any], many: bool) -> str:
    blocks: list[str] = []
    swapped = [_swap(v, blocks) for v in values]
    options: dict[str, Any] = {
        "Dumper": _Dumper,
        "sort_keys": False,
        "default_flow_style": False,
        "width": 120,
        "allow_unicode": True,
    }
    text = yaml.dump_all(swapped, **options) if many else yaml.dump(swapped[0], **options)
    return _unswap(text, blocks)


def dump(value: Any) -> str:
    return _dump([value], many=False)


def dump_all(values: list[Any]) -> str:
    return _dump(values, many=True)
