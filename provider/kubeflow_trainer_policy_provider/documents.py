"""Reading fields of Kubernetes objects held as plain data (as the reader returns them)."""

from __future__ import annotations

from typing import Any


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
