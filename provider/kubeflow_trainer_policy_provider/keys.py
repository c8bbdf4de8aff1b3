"""Provider keys: `<namespace>/<name>` of a TrainJob (its JobSet has the same namespace and name).

A key may carry a `#<suffix>` (the policy sends the admission request's uid): Gatekeeper caches
answers per key for minutes, so a key unique to each request always reaches this provider. The
suffix is stripped before the lookup and the answer is given for the key as sent.
"""

from __future__ import annotations

import re

_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
KEY_PATTERN = re.compile(rf"{_DNS_LABEL}/{_DNS_LABEL}(?:\.{_DNS_LABEL})*(?:#[A-Za-z0-9._:-]{{1,128}})?")
"""A DNS-1123 label namespace, a DNS-1123 subdomain name, an optional `#<request id>`. No JSON escaping needed."""


def parse_key(key: str) -> tuple[str, str] | None:
    if len(key) > 446 or KEY_PATTERN.fullmatch(key) is None:
        return None
    namespace, _, name = key.partition("#")[0].partition("/")
    return (namespace, name) if len(name) <= 253 else None


def canonical_key(namespace: str, name: str) -> str | None:
    """The key a JobSet is served under (the form `parse_key` accepts), or None if it cannot be one."""
    key = f"{namespace}/{name}"
    return key if parse_key(key) is not None else None
