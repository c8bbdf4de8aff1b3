"""Kubernetes resource quantities as exact integers of nano-units, parsed as apimachinery's ParseQuantity does.

`1.5Gi`, `500m`, `2e3`, `1e308`, `1k`, `100M`, `.5`, `+1`, `5n` -> value x 10^9 as an int. Like apimachinery, a
decimal exponent is any integer that fits int64 and is then wrapped to int32, a value with more than nine
fractional digits is rounded up (away from zero) to the next nano-unit, and a binary-SI value above 2^63-1 units
is capped there. Two bounds of this project's own: values from BEYOND (10^1000 nano-units) on are BEYOND (no
budget needs them; they compare as "at least that"), and a mantissa of more than MAX_DIGITS significant digits
is not parsed. The Rego lib `lib.trainer.nanos` implements the same grammar and arithmetic; tests keep the two
equal.
"""

from __future__ import annotations

import re
from typing import Any

NANO = 10**9
PATTERN = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE]([+-]?[0-9]+))?$")
DECIMAL_SUFFIX = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
MAX_BINARY_NANOS = (2**63 - 1) * NANO
"""apimachinery caps binary-SI quantities at math.MaxInt64 units."""
BEYOND_DIGITS = 1000
BEYOND = 10**BEYOND_DIGITS
"""The smallest value that is not exact: larger values parse as BEYOND."""
MAX_DIGITS = 1100
"""Significant mantissa digits parsed at most."""
INT64 = range(-(2**63), 2**63)


def parse_nanos(value: Any) -> int | None:
    """The quantity in nano-units, or None when `value` is not a Kubernetes quantity.

    JSON numbers are quantities too (apimachinery parses their text): integers exactly, other numbers by
    their shortest decimal text, as OPA's `sprintf("%v")` prints them.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):  # from Kubernetes JSON: within int64 (the reader makes larger ones floats)
        return _parse_text(str(value))
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
    whole, fraction, suffix = whole or "", fraction or "", suffix or ""
    if not whole and not fraction:
        return None
    if exponent is not None:
        decimal = _exponent(exponent)
        if decimal is None:
            return None
        magnitude = _magnitude(whole + fraction, len(fraction), decimal, 1)
    elif suffix in BINARY_SUFFIX:
        magnitude = _magnitude(whole + fraction, len(fraction), 0, 2 ** BINARY_SUFFIX[suffix])
    else:
        magnitude = _magnitude(whole + fraction, len(fraction), DECIMAL_SUFFIX[suffix], 1)
    if magnitude is None:
        return None
    return -magnitude if sign == "-" else magnitude


def _exponent(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), then int32(...) as apimachinery does; None outside int64."""
    body = text.lstrip("+-").lstrip("0")
    if len(body) > 19:
        return None
    value = int(body or "0")
    value = -value if text.startswith("-") else value
    if value not in INT64:
        return None
    return (value + 2**31) % 2**32 - 2**31


def _magnitude(digits: str, fraction: int, decimal: int, multiplier: int) -> int | None:
    significant = digits.lstrip("0")
    if not significant:
        return 0
    text = significant.rstrip("0")
    if len(text) > MAX_DIGITS:
        return None
    shift = decimal + 9 - fraction + (len(significant) - len(text))
    if multiplier == 1:
        # `text` has no trailing zero: dropping digits always drops a non-zero one, so rounding up adds 1.
        if len(text) + shift > BEYOND_DIGITS:
            return BEYOND
        if shift >= 0:
            return int(text) * 10**shift
        if len(text) + shift <= 0:
            return 1
        return int(text[: len(text) + shift]) + 1
    if len(text) + shift > 29:  # 10^29 x 1024 nano-units is already above the cap
        return MAX_BINARY_NANOS
    if shift >= 0:
        return min(int(text) * multiplier * 10**shift, MAX_BINARY_NANOS)
    return min(-(-int(text) * multiplier // 10**-shift), MAX_BINARY_NANOS)


def ceil_units(nanos: int) -> int:
    """Whole units, rounded up (apimachinery's Value())."""
    return -(-nanos // NANO)


def format_nanos(nanos: int) -> str:
    """A quantity string with the same value: whole units when exact (an exponent from 10^18 units on), else `m`,
    `u` or `n` units."""
    if nanos < 0:
        return "-" + format_nanos(-nanos)
    if nanos == 0:
        return "0"
    for exponent, suffix in ((9, ""), (6, "m"), (3, "u")):
        if nanos % 10**exponent == 0:
            units = nanos // 10**exponent
            return _units_text(units) if suffix == "" else f"{units}{suffix}"
    return f"{nanos}n"


def _units_text(units: int) -> str:
    if units < 10**18 or units % 10:
        return str(units)
    zeros = 0
    while units % 10 == 0:
        units //= 10
        zeros += 1
    return f"{units}e{zeros}"


def describe_nanos(nanos: int) -> str:
    """format_nanos, or "at least <BEYOND>" for a value beyond exact comparison."""
    return f"at least {format_nanos(BEYOND)}" if nanos >= BEYOND else format_nanos(nanos)
