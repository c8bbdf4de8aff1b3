"""Provider keys: `<namespace>/<name>` of a TrainJob (its JobSet has the same namespace and name)."""

from __future__ import annotations

import re

_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
KEY_PATTERN = re.compile(rf"{_DNS_LABEL}/{_DNS_LABEL}(?:\.{_DNS_LABEL})*")
"""A DNS-1123 label namespace and a DNS-1123 subdomain name. Such keys need no JSON escaping."""


def parse_key(key: str) -> tuple[str, str] | None:
    if len(key) > 317 or KEY_PATTERN.fullmatch(key) is None:
        return None
    namespace, _, name = key.partition("/")
    return (namespace, name) if len(name) <= 253 else None


def canonical_key(namespace: str, name: str) -> str | None:
    """The key a JobSet is served under (the form `parse_key` accepts), or None if it cannot be one."""
    key = f"{namespace}/{name}"
    return key if parse_key(key) is not None else None
