"""Unit tests of the Rego lib `lib.trainer.nanos`: (name, Rego expression, expected), answers from quantity.py."""

from __future__ import annotations

import json

from generator.podsets.quantity import format_nanos, parse_nanos

PARSED = [
    ("milli", "500m"),
    ("binary_fraction", "1.5Gi"),
    ("exponent", "2e3"),
    ("upper_exponent", "1E3"),
    ("negative_exponent", "1e-3"),
    ("signed_exponent", "1e+3"),
    ("kilo", "1k"),
    ("mega", "100M"),
    ("exa", "1E"),
    ("leading_dot", ".5"),
    ("trailing_dot", "5."),
    ("plus", "+1"),
    ("negative", "-1.5"),
    ("nano", "5n"),
    ("micro", "2u"),
    ("leading_zeros", "007"),
    ("rounds_up_to_nano", "0.0000000001"),
    ("rounds_up_binary", "0.0000000001Ki"),
    ("negative_rounds_away_from_zero", "-0.0000000001"),
    ("tiny_exponent", "1e-999"),
    ("binary_cap", "9223372036854775808Ei"),
    ("integer_number", 8),
    ("fraction_number", 1.5),
]
NOT_QUANTITIES = [
    ("word", "abc"),
    ("lower_binary", "1gi"),
    ("bare_exponent", "1e"),
    ("dot", "."),
    ("empty", ""),
    ("long_exponent", "1e1000"),
    ("space", " 1"),
    ("null", None),
    ("boolean", True),
    ("list", [1]),
]
FORMATTED = [1, 1000, 1000000, 1000000000, 1500000000, -2000000000, 0, 1610612736000000000]


def nanos_cases() -> list[tuple[str, str, object]]:
    cases: list[tuple[str, str, object]] = [
        (f"parse_{name}", f"parse({json.dumps(value)})", parse_nanos(value)) for name, value in PARSED
    ]
    cases += [(f"not_a_quantity_{name}", f"not parse({json.dumps(value)})", True) for name, value in NOT_QUANTITIES]
    cases += [(f"format_{i}", f"format({n})", format_nanos(n)) for i, n in enumerate(FORMATTED)]
    return cases
