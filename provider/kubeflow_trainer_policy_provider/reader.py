"""The one reading path for YAML and JSON input: files, stdin, suites, `--objects`, `--parameters`.

Every input is read with limits (bytes, documents, nesting, nodes added by YAML aliases) and refused with an
`InputError` naming the file and the limit; duplicate mapping keys and numbers no float64 holds are refused
naming the key or field. Documents come out one by one with their place in the stream, numbers as Kubernetes
decodes them (see `as_kubernetes_json`). Limits come from `ReadLimits.from_env()` unless a command line
sets them (`configure`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from kubeflow_trainer_policy_provider.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
MIB = 1024 * 1024
ENV_PREFIX = "TRAINER_POLICY_"


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on one input (a file or stdin). Each has a flag `--<name>` (dashes) and an environment variable
    `TRAINER_POLICY_<NAME>`."""

    max_input_bytes: int = 128 * MIB
    """Bytes read from one input: a JSON dump of 100k JobSets is about 50 MB, an admission request at most 3 MiB."""
    max_documents: int = 100_000
    """YAML documents in one input (`---` separated)."""
    max_depth: int = 512
    """Nested mappings and sequences; no Kubernetes object comes near it."""
    max_alias_nodes: int = 100_000
    """Nodes that YAML aliases add when expanded, per input: what an alias bomb multiplies."""
    max_folder_entries: int = 100_000
    """Files and folders looked at below one folder given as input (`review /` would walk the whole machine)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ReadLimits:
        values: dict[str, int] = {}
        for item in fields(cls):
            name = ENV_PREFIX + item.name.upper()
            if name in environ:
                values[item.name] = positive_int(environ[name], name)
        return cls(**values)

    def describe(self, name: str) -> str:
        """How a user raises the limit `name`."""
        return f"--{name.replace('_', '-')} or {ENV_PREFIX}{name.upper()}"


def positive_int(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(name, f"must be a whole number >= 1, got {text!r}")
    return value


_configured: ReadLimits | None = None


def configure(limits: ReadLimits | None) -> None:
    """The limits every later read uses (None: back to the environment's)."""
    global _configured
    _configured = limits


def current_limits() -> ReadLimits:
    return _configured if _configured is not None else ReadLimits.from_env()


LIMIT_HELP = {
    "max_input_bytes": "bytes read from one input file or stdin",
    "max_documents": "YAML documents in one input",
    "max_depth": "nesting of mappings and sequences",
    "max_alias_nodes": "nodes YAML aliases may add when expanded, per input",
    "max_folder_entries": "files and folders looked at below one folder given as input",
}


def add_limit_arguments(parser: argparse.ArgumentParser, *, default: Any = None) -> None:
    """The flags of every read limit (`default=argparse.SUPPRESS` on a subcommand keeps a value given before it)."""
    defaults = ReadLimits()
    group = parser.add_argument_group(f"input limits (also set by the environment: {ENV_PREFIX}<NAME>)")
    for item in fields(ReadLimits):
        group.add_argument(
            f"--{item.name.replace('_', '-')}",
            type=int,
            metavar="N",
            default=default,
            help=f"{LIMIT_HELP[item.name]} (default {getattr(defaults, item.name)})",
        )


def limits_from_args(args: argparse.Namespace) -> ReadLimits:
    """The environment's limits with those given as flags."""
    values = {}
    for item in fields(ReadLimits):
        value = getattr(args, item.name, None)
        if value is not None:
            values[item.name] = positive_int(str(value), f"--{item.name.replace('_', '-')}")
    return replace(ReadLimits.from_env(), **values)


@dataclass(frozen=True)
class Document:
    source: str
    """`file`, `file#N` for the N-th document (from 1) of a multi-document file, `... items[i]` in a List."""
    body: dict[str, Any]
    index: int = 0
    """Place of the document in its stream, from 0 (List items share their List's)."""


def display_name(path: str | Path) -> str:
    return STDIN_NAME if str(path) == STDIN else str(path)


def read_bytes(path: str | Path, limits: ReadLimits | None = None) -> bytes:
    """At most `max_input_bytes` of a file (or of stdin for `-`); more is refused before it is all read."""
    limits = limits or current_limits()
    name = display_name(path)
    if str(path) == STDIN:
        return _read_bounded(_stdin(), name, limits)
    try:
        with open(path, "rb") as handle:
            return _read_bounded(handle, name, limits)
    except IsADirectoryError as exc:
        raise InputError(name, "is a folder, not a file") from exc
    except OSError as exc:
        raise InputError(name, exc.strerror or str(exc)) from exc


def _stdin() -> BinaryIO:
    """Python sets sys.stdin to None when the process started with file descriptor 0 closed."""
    if sys.stdin is None:
        raise InputError(STDIN_NAME, "standard input is closed")
    return getattr(sys.stdin, "buffer", sys.stdin)


def _read_bounded(handle: Any, name: str, limits: ReadLimits) -> bytes:
    try:
        data = handle.read(limits.max_input_bytes + 1)
    except OSError as exc:
        raise InputError(name, exc.strerror or str(exc)) from exc
    except ValueError as exc:  # read from a closed file
        raise InputError(name, "closed before it could be read") from exc
    if isinstance(data, str):  # a text stand-in for stdin
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > limits.max_input_bytes:
        raise InputError(
            name,
            f"larger than the limit of {limits.max_input_bytes} bytes ({limits.describe('max_input_bytes')})",
        )
    return data


def decode(data: bytes, name: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(name, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from exc
    return text.removeprefix("\ufeff")


def iter_documents(path: str | Path, limits: ReadLimits | None = None) -> Iterator[Document]:
    """Every non-empty document of a YAML (or JSON) file or stdin, in order; a `kind: List` is flattened."""
    limits = limits or current_limits()
    name = display_name(path)
    yield from parse(decode(read_bytes(path, limits), name), name, limits)


def read_documents(path: str | Path, limits: ReadLimits | None = None) -> list[Document]:
    return list(iter_documents(path, limits))


def read_single(path: str | Path, limits: ReadLimits | None = None) -> Document:
    documents = read_documents(path, limits)
    if len(documents) != 1:
        raise InputError(display_name(path), f"expected exactly one document, found {len(documents)}")
    return documents[0]


def parse(text: str, source: str, limits: ReadLimits | None = None) -> Iterator[Document]:
    """The documents of text already read; `source` names it in errors. Checked whole before the first one."""
    limits = limits or current_limits()
    if len(text) > limits.max_input_bytes:
        raise InputError(
            source, f"larger than the limit of {limits.max_input_bytes} bytes ({limits.describe('max_input_bytes')})"
        )
    parsed = _load_json(text, source, limits)
    if parsed is not None:
        yield from _flatten(source, 0, parsed)
        return
    count = _scan_yaml(text, source, limits)
    try:
        index = 0
        for body in yaml.load_all(text, Loader=_StrictLoader):
            if body is None:  # an empty document (or a bare null)
                continue
            name = source if count == 1 else f"{source}#{index + 1}"
            if not isinstance(body, dict):
                raise InputError(name, f"expected a mapping (a Kubernetes object), got {type(body).__name__}")
            yield from _flatten(name, index, as_kubernetes_json(body, name))
            index += 1
    except yaml.YAMLError as exc:
        raise _yaml_error(text, source, exc) from exc


def parse_value(text: str, source: str, limits: ReadLimits | None = None) -> Any:
    """The one value of a YAML or JSON document of any kind (e.g. an OPA bundle's data.yaml), read with the same
    limits and checks as Kubernetes objects; None for an empty document."""
    limits = limits or current_limits()
    if len(text) > limits.max_input_bytes:
        raise InputError(
            source, f"larger than the limit of {limits.max_input_bytes} bytes ({limits.describe('max_input_bytes')})"
        )
    parsed = _load_json(text, source, limits)
    if parsed is not None:
        return parsed
    if _scan_yaml(text, source, limits) > 1:
        raise InputError(source, "expected one document")
    try:
        value = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise _yaml_error(text, source, exc) from exc
    return as_kubernetes_json(value, source)


def _yaml_error(text: str, source: str, exc: yaml.YAMLError) -> InputError:
    if isinstance(exc, DuplicateKeyError):
        return InputError(source, str(exc))
    # libyaml's error positions can lie (e.g. a line past the end): the pure parser says where, exactly.
    try:
        for _ in yaml.parse(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as exact:
        exc = exact
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return InputError(source, f"invalid YAML{where}: {problem}")


# --- YAML -------------------------------------------------------------------------------------------------------

_SCANNER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it (several times faster), else the pure-Python one."""


def _scan_yaml(text: str, source: str, limits: ReadLimits) -> int:
    """Documents, depth and alias expansion counted on the event stream, before anything is built: libyaml's
    composer recurses in C (about 50,000 levels crash the process) and an alias bomb is tiny as text. Returns the
    number of documents that are not empty (or a bare null)."""
    depth = documents = empty = aliased = nodes = 0
    root = False
    anchors: dict[str, int] = {}
    starts: list[tuple[int, str | None]] = []
    scalar, alias, doc_start = yaml.ScalarEvent, yaml.AliasEvent, yaml.DocumentStartEvent
    opening = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    closing = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    try:
        for event in yaml.parse(text, Loader=_SCANNER):
            kind = type(event)
            if kind is scalar:
                if root and _is_null(event):
                    empty += 1
                root = False
                nodes += 1
                if event.anchor:
                    anchors[event.anchor] = 1
            elif kind in opening:
                root = False
                depth += 1
                if depth > limits.max_depth:
                    raise InputError(
                        source, f"nested deeper than the limit of {limits.max_depth} ({limits.describe('max_depth')})"
                    )
                starts.append((nodes, event.anchor))
                nodes += 1
            elif kind in closing:
                depth -= 1
                start, anchor = starts.pop()
                if anchor:
                    anchors[anchor] = nodes - start
            elif kind is alias:
                root = False
                size = anchors.get(event.anchor, 1)
                nodes += size
                aliased += size
                if aliased > limits.max_alias_nodes:
                    raise InputError(
                        source,
                        f"YAML aliases expand to more than the limit of {limits.max_alias_nodes} nodes "
                        f"({limits.describe('max_alias_nodes')})",
                    )
            elif kind is doc_start:
                root = True
                documents += 1
                anchors.clear()  # anchors are scoped to their document
                if documents > limits.max_documents:
                    raise InputError(
                        source,
                        f"more than the limit of {limits.max_documents} documents ({limits.describe('max_documents')})",
                    )
    except yaml.YAMLError as exc:
        raise _yaml_error(text, source, exc) from exc
    return documents - empty


_NULLS = ("", "~", "null", "Null", "NULL")


def _is_null(event: yaml.ScalarEvent) -> bool:
    return event.tag is None and not event.style and event.value in _NULLS


class DuplicateKeyError(yaml.constructor.ConstructorError):
    def __str__(self) -> str:
        return str(self.problem)


@dataclass(frozen=True)
class OutOfRange:
    """A number literal that no float64 holds: Kubernetes refuses it; the conversion names its field."""

    literal: str


MAX_NUMBER_DIGITS = 400
"""More digits than any float64 (1.8e308) has: such a literal is refused before Python converts it."""


class _StrictLoader(_SCANNER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing duplicate keys (Kubernetes' strict decoding does) and not converting integers
    too long to be numbers (Python's int() refuses more than 4,300 digits with a message that names nothing)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[type, Any]] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # merged keys may be overridden; only keys written twice are an error
                key = self.construct_object(key_node, deep=deep)
                try:
                    marker = (type(key), key)
                    duplicate = marker in seen
                except TypeError:
                    continue  # an unhashable key: the base constructor refuses it
                if duplicate:
                    mark = key_node.start_mark
                    raise DuplicateKeyError(
                        problem=f"duplicate key {key!r} at line {mark.line + 1}, column {mark.column + 1}",
                        problem_mark=mark,
                    )
                seen.add(marker)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        text = str(node.value)
        if len(text) > MAX_NUMBER_DIGITS:
            return OutOfRange(text)
        return super().construct_yaml_int(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


# --- JSON -------------------------------------------------------------------------------------------------------

JSON_CHECKED_BYTES = 8 * MIB
"""JSON up to this size (every admission request: the API server sends at most 3 MiB) is checked for duplicate
keys and depth like YAML. Larger JSON is what `kubectl get -o json` dumps for --objects: checking each of its
million objects in Python would double the time a 100k-JobSet provider takes to answer, so there the parser's own
recursion guard bounds the depth and duplicate keys are not looked for."""


class _JsonState:
    out_of_range = False


def _json_int(literal: str, state: _JsonState) -> int | float | OutOfRange:
    """A JSON integer as apimachinery decodes it (see as_kubernetes_json), during parsing."""
    if len(literal) > MAX_NUMBER_DIGITS:
        state.out_of_range = True
        return OutOfRange(literal)
    value = int(literal)
    if value in INT64:
        return value
    return float(value)


def _json_float(literal: str, state: _JsonState) -> int | float | OutOfRange:
    """A JSON number with a fraction or exponent as apimachinery decodes it (see as_kubernetes_json)."""
    value = float(literal)
    if math.isinf(value):
        state.out_of_range = True
        return OutOfRange(literal)
    return int(value) if value.is_integer() and abs(value) < 1e6 else value


_LONG_DIGIT_RUN = re.compile("[0-9]" * 19)
"""Spelled out: re scans 47 MB with it in half the time of `[0-9]{19}`."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateJsonKey(key)
            seen.add(key)
    return mapping


class _DuplicateJsonKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _load_json(text: str, source: str, limits: ReadLimits) -> dict[str, Any] | list[Any] | None:
    """A JSON file parsed as JSON, its numbers already as Kubernetes reads them (hundreds of times faster than any
    YAML loader on large `--objects` files); None when it is not JSON (e.g. YAML with a flow mapping)."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    state = _JsonState()
    # One small hook per kind of number: a single hook that tested every literal for ".eE" and went through
    # as_kubernetes_json was 4 of the 6 s that 100k JobSets took to load (objects_first_answer_s_100k in
    # benchmarks/provider_load.py); json calls parse_int only for integers, parse_float only for the rest.
    # An integer outside int64 has at least 19 digits; without such a run of digits anywhere (a cheap C scan),
    # json's own integer path is exact and skips 1.1M Python calls for 100k JobSets.
    checked = len(text) <= JSON_CHECKED_BYTES
    try:
        value = json.loads(
            text,
            parse_int=(lambda s: _json_int(s, state)) if _LONG_DIGIT_RUN.search(text) else None,
            parse_float=lambda s: _json_float(s, state),
            parse_constant=_no_constant,
            object_pairs_hook=_unique_keys if checked else None,
        )
    except _DuplicateJsonKey as exc:
        raise InputError(source, f"duplicate key {exc.key!r}") from exc
    except RecursionError as exc:
        raise InputError(
            source, f"nested deeper than the limit of {limits.max_depth} ({limits.describe('max_depth')})"
        ) from exc
    except ValueError:
        return None
    if checked and _json_depth(value) > limits.max_depth:
        raise InputError(source, f"nested deeper than the limit of {limits.max_depth} ({limits.describe('max_depth')})")
    if state.out_of_range:
        as_kubernetes_json(value, source)  # names the field
    return value


def _json_depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if type(item) is dict else item
        stack.extend((c, depth + 1) for c in children if type(c) in (dict, list))
    return deepest if type(value) in (dict, list) else 0


# --- Kubernetes JSON ---------------------------------------------------------------------------------------------

INT64 = range(-(2**63), 2**63)


def as_kubernetes_json(value: Any, source: str, field: str = "") -> Any:
    """`value` with numbers as Kubernetes decodes them and Gatekeeper hands them to OPA.

    apimachinery keeps a JSON number that fits int64 as an integer and makes every other number a
    float64 (and refuses one no float64 holds); OPA then writes a float64 in Go's shortest `%g` form, so
    `1.0` becomes `1` and 12345678901234567890 becomes 1.2345678901234567e+19 (both recorded from
    Gatekeeper). Python's float repr agrees with `%g` except that Go switches to an exponent from 1e6 on
    and Python from 1e16: integral floats below 1e6 become ints here, and the value (never the spelling)
    of a float between 1e6 and 1e16 is what reaches OPA. Map keys are strings in Kubernetes JSON.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if value in INT64:
            return value
        try:
            return float(value)
        except OverflowError:
            raise InputError(source, "number out of range (no float64 holds it)", field=field or None) from None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InputError(source, "NaN and infinity are not JSON numbers", field=field or None)
        return int(value) if value.is_integer() and abs(value) < 1e6 else value
    if isinstance(value, OutOfRange):
        shown = value.literal if len(value.literal) <= 40 else f"{value.literal[:20]}... ({len(value.literal)} chars)"
        raise InputError(source, f"number {shown} out of range (no float64 holds it)", field=field or None)
    if isinstance(value, dict):
        return {str(k): as_kubernetes_json(v, source, _join(field, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [as_kubernetes_json(v, source, f"{field}[{i}]") for i, v in enumerate(value)]
    # YAML timestamps and binary values: Kubernetes JSON carries them as strings.
    return str(value) if not isinstance(value, bytes) else value.decode("utf-8", "replace")


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _flatten(source: str, index: int, body: Any) -> Iterator[Document]:
    if not isinstance(body, dict):
        raise InputError(source, f"expected a mapping (a Kubernetes object), got {type(body).__name__}")
    kind = body.get("kind")
    if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in body):
        items = body.get("items")
        if not isinstance(items, list):
            raise InputError(source, "must be a list", field="items")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(source, "must be a mapping", field=f"items[{i}]")
            yield Document(f"{source} items[{i}]", item, index)
    else:
        yield Document(source, body, index)
