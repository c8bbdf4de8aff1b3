"""Kubernetes resource quantities as exact integers of nano-units, parsed as apimachinery's ParseQuantity does.

`1.5Gi`, `500m`, `2e3`, `1k`, `100M`, `.5`, `+1`, `5n` -> value x 10^9 as an int. Like apimachinery, a value
with more than nine fractional digits is rounded up (away from zero) to the next nano-unit, and a binary-SI
value above 2^63-1 units is capped there. One deliberate limit: decimal exponents have at most three digits
(`1e999`); apimachinery would also accept `1e99999`, a number no budget needs and no policy should expand.
The Rego lib `lib.trainer.nanos` implements the same grammar and arithmetic; tests keep the two equal.
"""

from __future__ import annotations

import re
from typing import Any

NANO = 10**9
PATTERN = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE]([+-]?[0-9]{1,3}))?$")
DECIMAL_SUFFIX = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
MAX_BINARY_NANOS = (2**63 - 1) * NANO
"""apimachinery caps binary-SI quantities at math.MaxInt64 units."""


def parse_nanos(value: Any) -> int | None:
    """The quantity in nano-units, or None when `value` is not a Kubernetes quantity.

    JSON numbers are quantities too (apimachinery parses their text): integers exactly, other numbers by
    their shortest decimal text, as OPA's `sprintf("%v")` prints them.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * NANO
    if isinstance(value, float):
        return _parse_text(repr(value)) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        return _parse_text(value)
    return None


def _parse_text(text: str) -> int | None:
    match = PATTERN.match(text)
    if match is None:
        return None
    sign, whole, fraction, suffix, exponent = match.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        return None
    suffix = suffix or ""
    digits = int(whole + fraction or "0")
    if exponent is not None:
        decimal, binary = int(exponent), 0
    elif suffix in BINARY_SUFFIX:
        decimal, binary = 0, BINARY_SUFFIX[suffix]
    else:
        decimal, binary = DECIMAL_SUFFIX[suffix], 0
    shift = decimal + 9 - len(fraction)
    magnitude = digits * 2**binary
    if shift >= 0:
        magnitude *= 10**shift
    else:
        magnitude = -(-magnitude // 10**-shift)  # rounded up, as apimachinery rounds to nano precision
    if suffix in BINARY_SUFFIX and magnitude > MAX_BINARY_NANOS:
        magnitude = MAX_BINARY_NANOS
    return -magnitude if sign == "-" else magnitude


def format_nanos(nanos: int) -> str:
    """A quantity string with the same value: whole units when exact, else `m`, `u` or `n` units."""
    for exponent, suffix in ((9, ""), (6, "m"), (3, "u")):
        if nanos % 10**exponent == 0:
            return f"{nanos // 10**exponent}{suffix}"
    return f"{nanos}n"
