"""Reading YAML/JSON files of Kubernetes objects, with errors that name the file and document."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeflow_trainer_policy_provider.errors import InputError

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (several times faster), else the pure-Python one."""
MAX_NESTING = 512
"""Deepest nesting of mappings and sequences read; no Kubernetes object comes near it."""


@dataclass(frozen=True)
class Document:
    source: str
    """`file` or `file#N` for the N-th document (from 1) of a multi-document file."""
    body: dict[str, Any]


def dig(body: Any, *keys: str) -> Any:
    """`body[k1][k2]...`, or None where any step is missing or not a mapping."""
    for key in keys:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body


def group_version_kind(obj: dict[str, Any]) -> tuple[str, str, str]:
    api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else ""
    group, _, version = api_version.rpartition("/")
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else ""
    return group, version, kind


def read_documents(path: str | Path) -> list[Document]:
    """Every non-empty document of a YAML (or JSON) file; a `kind: List` is flattened."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "not UTF-8 text") from exc
    return parse_documents(text, str(path))


def parse_documents(text: str, path: str) -> list[Document]:
    """`read_documents` of text already read (e.g. from stdin); `path` names it in errors."""
    try:
        parsed_json = _load_json(text)
        raw = parsed_json if parsed_json is not None else _load_all(text)
    except RecursionError as exc:
        raise InputError(str(path), f"nested too deeply to parse (at most {MAX_NESTING} levels)") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(str(path), f"invalid YAML{where}: {problem}") from exc
    documents: list[Document] = []
    for index, body in enumerate(raw, start=1):
        source = str(path) if len(raw) == 1 else f"{path}#{index}"
        if not isinstance(body, dict):
            raise InputError(source, f"expected a mapping (a Kubernetes object), got {type(body).__name__}")
        try:
            body = body if parsed_json is not None else as_kubernetes_json(body, source)
        except RecursionError as exc:
            raise InputError(source, f"nested too deeply to parse (at most {MAX_NESTING} levels)") from exc
        documents.extend(_flatten(source, body))
    return documents


def _check_nesting(text: str) -> None:
    """libyaml's composer recurses in C: about 50,000 levels crash the process (SIGSEGV), so depth is
    counted first on its event stream, which is not recursive."""
    depth = 0
    for event in yaml.parse(text, Loader=SAFE_LOADER):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise RecursionError(f"more than {MAX_NESTING} nested levels")
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1


def _json_int(literal: str) -> int | float:
    """A JSON integer as apimachinery decodes it (see as_kubernetes_json), during parsing."""
    value = int(literal)
    return value if value in INT64 else float(value)


def _json_float(literal: str) -> int | float:
    """A JSON number with a fraction or exponent as apimachinery decodes it (see as_kubernetes_json)."""
    return as_kubernetes_json(float(literal), "", "")


_LONG_DIGIT_RUN = re.compile("[0-9]" * 19)
"""Spelled out: re scans 47 MB with it in half the time of `[0-9]{19}`."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _load_json(text: str) -> list[Any] | None:
    """A JSON file parsed as JSON, its numbers already as Kubernetes reads them (hundreds of times faster than any
    YAML loader on large `--objects` files); None when it is not JSON (e.g. YAML with a flow mapping)."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        # One small hook per kind of number: a single hook that tested every literal for ".eE" and went through
        # as_kubernetes_json was 4 of the 6 s that 100k JobSets took to load (objects_first_answer_s_100k in
        # benchmarks/provider_load.py); json calls parse_int only for integers, parse_float only for the rest.
        # An integer outside int64 has at least 19 digits; without such a run of digits anywhere (a cheap C scan),
        # json's own integer path is exact and skips 1.1M Python calls for 100k JobSets.
        parse_int = _json_int if _LONG_DIGIT_RUN.search(text) else None
        return [json.loads(text, parse_int=parse_int, parse_float=_json_float, parse_constant=_no_constant)]
    except ValueError:
        return None


def _load_all(text: str) -> list[Any]:
    if SAFE_LOADER is yaml.SafeLoader:  # the pure loader raises RecursionError by itself
        return [d for d in yaml.load_all(text, Loader=SAFE_LOADER) if d is not None]
    try:
        _check_nesting(text)
        return [d for d in yaml.load_all(text, Loader=SAFE_LOADER) if d is not None]
    except yaml.YAMLError:
        pass
    # libyaml's error positions differ (e.g. a line past the end): the pure loader says where, exactly.
    return [d for d in yaml.load_all(text, Loader=yaml.SafeLoader) if d is not None]


INT64 = range(-(2**63), 2**63)


def as_kubernetes_json(value: Any, source: str, field: str = "") -> Any:
    """`value` with numbers as Kubernetes decodes them and Gatekeeper hands them to OPA.

    apimachinery keeps a JSON number that fits int64 as an integer and makes every other number a
    float64; OPA then writes a float64 in Go's shortest `%g` form, so `1.0` becomes `1` and
    12345678901234567890 becomes 1.2345678901234567e+19 (both recorded from Gatekeeper). Python's
    float repr agrees with `%g` except that Go switches to an exponent from 1e6 on and Python from
    1e16: integral floats below 1e6 become ints here, and the value (never the spelling) of a float
    between 1e6 and 1e16 is what reaches OPA. Map keys are strings in Kubernetes JSON.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if value in INT64 else float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InputError(source, "NaN and infinity are not JSON numbers", field=field or None)
        return int(value) if value.is_integer() and abs(value) < 1e6 else value
    if isinstance(value, dict):
        return {str(k): as_kubernetes_json(v, source, _join(field, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [as_kubernetes_json(v, source, f"{field}[{i}]") for i, v in enumerate(value)]
    # YAML timestamps and binary values: Kubernetes JSON carries them as strings.
    return str(value) if not isinstance(value, bytes) else value.decode("utf-8", "replace")


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _flatten(source: str, body: dict[str, Any]) -> Iterator[Document]:
    kind = body.get("kind")
    if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in body):
        items = body.get("items")
        if not isinstance(items, list):
            raise InputError(source, "must be a list", field="items")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(source, "must be a mapping", field=f"items[{i}]")
            yield Document(f"{source} items[{i}]", item)
    else:
        yield Document(source, body)


def read_single(path: str | Path) -> Document:
    documents = read_documents(path)
    if len(documents) != 1:
        raise InputError(str(path), f"expected exactly one document, found {len(documents)}")
    return documents[0]
