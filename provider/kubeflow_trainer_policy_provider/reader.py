"""The one reading path for YAML and JSON input: files, stdin, suites, `--objects`, `--parameters`.

Every input is read with limits (bytes, documents, nesting, nodes added by YAML aliases) and refused with an
`InputError` naming the file and the limit; duplicate mapping keys and numbers no float64 holds are refused
naming the key or field. Documents come out one by one with their place in the stream, YAML scalars resolved as
kubectl resolves them (`_go_resolve`: `1e3` is 1000, `0o10` is 8, `on` is true) and numbers as Kubernetes decodes
them (see `as_kubernetes_json`). Limits come from `ReadLimits.from_env()` unless a command line sets them
(`configure`); a bad YAML input is refused from libyaml's one pass, never parsed again.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import struct
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from decimal import Decimal
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


MAX_LIMIT = 10**12
"""The largest value any limit takes (a terabyte, a trillion nodes): a larger one is a typo, not a need."""
_WHOLE_NUMBER = re.compile(r"[0-9]{1,13}\Z")


def positive_int(text: str, name: str, ceiling: int = MAX_LIMIT) -> int:
    """A limit given as text (a flag or an environment variable): ASCII digits only, from 1 to `ceiling`."""
    stripped = text.strip()
    value = int(stripped) if _WHOLE_NUMBER.match(stripped) else 0
    if not 1 <= value <= ceiling:
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise InputError(name, f"must be a whole number from 1 to {ceiling}, got {shown!r}")
    return value


KNOWN_VARIABLES = frozenset(
    {
        *(ENV_PREFIX + item.name.upper() for item in fields(ReadLimits)),
        "TRAINER_POLICY_BUNDLE_MAX_ENTRIES",
        "TRAINER_POLICY_BUNDLE_MAX_ENTRY_BYTES",
        "TRAINER_POLICY_BUNDLE_MAX_TOTAL_BYTES",
        "TRAINER_POLICY_BUNDLE_LAYER_BYTES",
        "TRAINER_POLICY_CACHE_DIR",
        "TRAINER_POLICY_OPA",
        "TRAINER_POLICY_CEL",
        "TRAINER_POLICY_GATOR",
        "TRAINER_POLICY_REGAL",
        "TRAINER_POLICY_CONFTEST",
        "TRAINER_POLICY_ORACLE_DIR",
        "TRAINER_POLICY_REGISTRY_PASSWORD",
        "TRAINER_POLICY_CEL_FUZZ_EXAMPLES",  # read by the test suite only
    }
)
"""Every TRAINER_POLICY_* variable trainer-policy or the provider reads (tests/cli/test_environment.py finds
each name the code reads here)."""


def unknown_variables(environ: Mapping[str, str] = os.environ) -> list[str]:
    """One warning per TRAINER_POLICY_* variable that nothing reads (a misspelt limit is otherwise silently
    ignored), naming the closest known one."""
    warnings = []
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and name not in KNOWN_VARIABLES:
            suffixes = sorted(known.removeprefix(ENV_PREFIX) for known in KNOWN_VARIABLES)
            close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1, cutoff=0.75)
            hint = f" (did you mean {ENV_PREFIX}{close[0]}?)" if close else ""
            shown = name if len(name) <= 80 else name[:80] + "..."
            warnings.append(f"warning: {shown!r} is not a variable this program reads; ignored{hint}")
    return warnings


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


READ_CHUNK = 4 * MIB


def _read_bounded(handle: Any, name: str, limits: ReadLimits) -> bytes:
    """Read in chunks, never asking for the whole limit at once: read(n) allocates n bytes up front."""
    chunks: list[Any] = []
    size = 0
    try:
        while size <= limits.max_input_bytes:
            chunk = handle.read(min(READ_CHUNK, limits.max_input_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputError(name, exc.strerror or str(exc)) from exc
    except ValueError as exc:  # read from a closed file
        raise InputError(name, "closed before it could be read") from exc
    data = "".join(chunks) if chunks and isinstance(chunks[0], str) else b"".join(chunks)
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
    """One line naming the place libyaml stopped at. The input is never parsed again to find it (a second parse
    in pure Python took minutes on a large or deeply nested input): libyaml places an error at the end of the
    input one line past it when the last line has no newline, which is the one place corrected here."""
    if isinstance(exc, DuplicateKeyError):
        return InputError(source, str(exc))
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = ""
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
        end_line = text.count("\n") + 1
        end_column = len(text) - text.rfind("\n")
        if (line, column) > (end_line, end_column):
            line, column = end_line, end_column
        where = f" at line {line}, column {column}"
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
    """The safe loader, refusing duplicate keys (Kubernetes' strict decoding does), with scalars resolved as kubectl
    resolves them (`_go_resolve`) instead of by PyYAML's YAML 1.1 rules."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        """A mapping with its keys as sigs.k8s.io/yaml writes them into JSON (`_json_key`); a key written twice,
        or two keys that become the same JSON key (`1` and `1.0`, `yes` and `true`), is an error."""
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)
        mapping: dict[str, Any] = {}
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                # go-yaml v2 merges where `<<` is written: over the keys before it, under the keys after it;
                # of several mappings, the first wins.
                for merged in reversed(self._merged(value_node, deep)):
                    mapping.update(merged)
                continue
            key = self._json_key(key_node, deep)
            if key in seen:  # only keys written twice in the mapping itself: merged ones may be overridden
                mark = key_node.start_mark
                raise DuplicateKeyError(
                    problem=f"duplicate key {_written(key_node, key)!r} at line {mark.line + 1}, "
                    f"column {mark.column + 1}",
                    problem_mark=mark,
                )
            seen.add(key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def _merged(self, node: yaml.Node, deep: bool) -> list[dict[str, Any]]:
        nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
        if not all(isinstance(n, yaml.MappingNode) for n in nodes):
            raise yaml.constructor.ConstructorError(
                None, None, "map merge requires a mapping or a sequence of mappings as its value", node.start_mark
            )
        return [self.construct_mapping(n, deep=True) for n in nodes]

    def _json_key(self, node: yaml.Node, deep: bool) -> str:
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            if tag == "tag:yaml.org,2002:str":
                return str(node.value)
            if tag in _EXPLICIT_TAGS:
                self.construct_object(node, deep=deep)  # refuses text that is not of the tag's kind
            if tag == _NUMBER_TAG or tag in _EXPLICIT_TAGS:
                # The Go value, not the one stored: a float key keeps its float formatting (`1e7` is "1e+07").
                kind, value = _go_resolve(str(node.value))
                if tag == "tag:yaml.org,2002:float" and kind == "int":
                    value = float(value)
                return _json_key(value, node.start_mark)
        key = self.construct_object(node, deep=deep)
        return _json_key(key, node.start_mark)


def _written(node: yaml.Node, key: Any) -> Any:
    """A key as written (`yes`, not True), for messages."""
    return node.value if isinstance(node, yaml.ScalarNode) else key


# --- Scalars as kubectl reads them ----------------------------------------------------------------------------
#
# kubectl turns YAML into JSON with sigs.k8s.io/yaml (YAMLToJSON: go.yaml.in/yaml/v2's Unmarshal into interface{},
# then encoding/json), and the API server decodes that JSON. go-yaml v2 (resolve.go) is neither PyYAML's YAML 1.1
# nor YAML 1.2: `y`/`n`/`yes`/`on`/`off` are booleans; a plain scalar that starts with a digit or a sign has its
# underscores dropped and is read by Go's strconv.ParseInt(s, 0, 64) (so `0o10`, `0x1F`, `0b1` and `012` (octal)
# are integers), then ParseUint, then as a float if it matches `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
# (`1e3`, `+1e3`, `1.`, `08`); one that starts with `.` is a float if ParseFloat reads it; timestamps and
# sexagesimal `1:20` stay strings. encoding/json then writes a float64 without exponent below 1e21, so the API
# server reads an integral one (`1e3`, `1.0e3`) back as the integer 1000. tests/kube/test_yaml_numbers.py holds
# this against kubectl and a real API server, spelling by spelling.

_NUMBER_TAG = "tag:kubeflow-trainer-policy,2026:kubectl-number"
_BOOLS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?\Z")
"""What Go's ParseFloat reads of a scalar starting with `.` (go-yaml looks `.inf` and `.nan` up first)."""
_GO_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
UINT64_MAX = 2**64 - 1


def _go_parse_uint(text: str, base: int) -> int | None:
    """Go's strconv.ParseUint(text, base, 64) on text without underscores; base 0 reads the 0b/0o/0x/0 prefixes."""
    if base == 0:
        base = 10
        if text[:1] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]  # "0" alone is 0: nothing left to read
        elif not text:
            return None
    elif not text:
        return None
    if any(c not in _GO_DIGITS[base] for c in text):
        return None
    value = int(text, base) if text else 0
    return value if value <= UINT64_MAX else None


def _go_parse_int(text: str, base: int) -> int | None:
    """Go's strconv.ParseInt(text, base, 64): an optional sign, then ParseUint; None outside int64."""
    sign = -1 if text[:1] == "-" else 1
    magnitude = _go_parse_uint(text[1:] if text[:1] in "+-" else text, base) if text else None
    if magnitude is None:
        return None
    value = sign * magnitude
    return value if -(2**63) <= value < 2**63 else None


def _go_float(value: float) -> int | float:
    """A float64 as the API server reads it back from encoding/json: below 1e21 Go writes the shortest digits that
    read back as the value, without an exponent (-9.223372036854776e18 as -9223372036854776000), and the API
    server decodes a JSON number written as an integer that fits int64 as an integer."""
    if value.is_integer() and abs(value) < 1e21:
        written = int(Decimal(repr(value)))
        if written in INT64:
            return written
    return value


def _go_resolve(text: str) -> tuple[str, Any]:
    """go-yaml v2's resolve() of a plain scalar: its kind (str, bool, null, int, float) and Go value. A float no
    float64 holds (`1e400`) is text, as Go's ParseFloat fails on it; a literal of more than MAX_NUMBER_DIGITS
    characters that looks like a number is OutOfRange (refused), not converted."""
    if text in _BOOLS:
        return "bool", _BOOLS[text]
    if text in _NULLS:
        return "null", None
    if text in _SPECIAL_FLOATS:
        return "float", _SPECIAL_FLOATS[text]  # refused later, as encoding/json refuses NaN and infinities
    first = text[:1]
    if first == ".":
        return _parse_float(text) if _DOT_FLOAT.match(text) else ("str", text)
    if not first or first not in "+-0123456789":
        return "str", text
    plain = text.replace("_", "")
    if len(plain) > MAX_NUMBER_DIGITS:  # Python's int() and float() are not made to read such text
        return ("float", OutOfRange(text)) if _YAML_STYLE_FLOAT.match(plain) else ("str", text)
    number = _go_parse_int(plain, 0)
    if number is None and first not in "+-":
        number = _go_parse_uint(plain, 0)
    if number is not None:
        return "int", number
    if _YAML_STYLE_FLOAT.match(plain):
        found, value = _parse_float(plain)
        return (found, value) if found == "float" else ("str", text)
    if plain.startswith("0b"):
        number = _go_parse_int(plain[2:], 2)
        if number is None and plain[2:3] not in ("+", "-"):
            number = _go_parse_uint(plain[2:], 2)
    elif plain.startswith("-0b"):
        number = _go_parse_int("-" + plain[3:], 2)
    return ("int", number) if number is not None else ("str", text)


def _parse_float(text: str) -> tuple[str, Any]:
    value = float(text)
    return ("str", text) if math.isinf(value) else ("float", value)


def _as_stored(value: Any) -> Any:
    return _go_float(value) if isinstance(value, float) and math.isfinite(value) else value


def _construct_number(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> Any:
    return _as_stored(_go_resolve(str(node.value))[1])


def _explicit(kind: str) -> Any:
    """A scalar tagged `!!int`, `!!float`, `!!bool` or `!!null` (or resolved as a bool or null): go-yaml resolves
    its text as if plain and fails unless it is of that kind (an int may be a !!float)."""

    def construct(loader: yaml.BaseLoader, node: yaml.Node) -> Any:
        text = loader.construct_scalar(node)
        found, value = _go_resolve(text)
        if found == kind or (kind == "float" and found == "int"):
            return _as_stored(value)
        raise yaml.constructor.ConstructorError(None, None, f"cannot decode `{text}` as a !!{kind}", node.start_mark)

    return construct


def _construct_timestamp(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> str:
    """go-yaml gives a timestamp read into interface{} as its text."""
    return str(node.value)


_StrictLoader.yaml_implicit_resolvers = {}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile("(?:" + "|".join(_BOOLS) + r")\Z"), list("yYnNtTfFoO")
)
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"(?:~|null|Null|NULL|)\Z"), ["~", "n", "N", ""]
)
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"<<\Z"), ["<"])
_StrictLoader.add_implicit_resolver(_NUMBER_TAG, re.compile(r"[-+.0-9]"), list("-+.0123456789"))
_StrictLoader.add_constructor(_NUMBER_TAG, _construct_number)
for _kind in ("int", "float", "bool", "null"):
    _StrictLoader.add_constructor(f"tag:yaml.org,2002:{_kind}", _explicit(_kind))
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
_EXPLICIT_TAGS = {f"tag:yaml.org,2002:{kind}": kind for kind in ("int", "float", "bool", "null")}


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


def _json_key(key: Any, mark: Any) -> str:
    """A YAML mapping key as sigs.k8s.io/yaml writes it into JSON (convertToJSONableObject): booleans as
    true/false, integers in decimal, floats as Go's FormatFloat(f, 'g', -1, 32); null, integers beyond int64
    (Go's uint64), NaN and infinities... are refused there ("unsupported map key")."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and key in INT64:
        return str(key)
    if isinstance(key, float):
        return _go_float32_g(key)
    if isinstance(key, bytes):  # !!binary
        return key.decode("utf-8", "replace")
    raise yaml.constructor.ConstructorError(None, None, f"unsupported mapping key {key!r} (kubectl refuses it)", mark)


def _go_float32_g(value: float) -> str:
    """Go's strconv.FormatFloat(value, 'g', -1, 32): the shortest text that reads back as the same float32, with
    an exponent below 1e-4 and from 1e6 on (1e+06, 1.5e-05)."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1.0, single) < 0 else "0"
    for precision in range(1, 10):
        text = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole, fraction = digits[: exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1 :]
    return f"{sign}{whole}{'.' + fraction if fraction else ''}"


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
