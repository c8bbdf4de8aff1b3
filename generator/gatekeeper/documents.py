"""Reading YAML/JSON files of Kubernetes objects, with errors that name the file and document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generator.errors import InputError

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (about 4x faster than the pure-Python one)."""


def _parse(text: str) -> list[Any]:
    """The file's documents: JSON parsed as JSON (hundreds of times faster than any YAML loader), else YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except (ValueError, RecursionError):
            pass  # not JSON after all (or a YAML flow mapping): let the YAML loader parse it or explain why
    try:
        return list(yaml.load_all(text, Loader=_YAML_LOADER))
    except yaml.YAMLError:
        # libyaml places some marks differently; the pure-Python loader names the error the way users see it
        return list(yaml.safe_load_all(text))


@dataclass(frozen=True)
class Document:
    source: str
    """`file` or `file#N` for the N-th document (from 1) of a multi-document file."""
    body: dict[str, Any]


def read_documents(path: str | Path) -> list[Document]:
    """Every non-empty document of a YAML (or JSON) file; a `kind: List` is flattened."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "not UTF-8 text") from exc
    try:
        raw = [d for d in _parse(text) if d is not None]
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
        documents.extend(_flatten(source, body))
    return documents


def _flatten(source: str, body: dict[str, Any]) -> Iterator[Document]:
    if body.get("kind") == "List" or (body.get("kind", "").endswith("List") and "items" in body):
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
