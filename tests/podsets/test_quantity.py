"""Quantities parse to exact nano-units as apimachinery's ParseQuantity gives them, in Python and in Rego."""

from __future__ import annotations

import pytest

from kubeflow_trainer_policy.podsets.quantity import format_nanos, parse_nanos

G = 10**9

# (text, value in nano-units): values worked out by hand from apimachinery's rules.
EXACT = [
    ("500m", 500_000_000),
    ("1.5Gi", 3 * 2**29 * G),
    ("2e3", 2000 * G),
    ("2E3", 2000 * G),
    ("1k", 1000 * G),
    ("100M", 100_000_000 * G),
    ("1Ki", 1024 * G),
    ("1E", 10**18 * G),
    ("1Ei", 2**60 * G),
    (".5", G // 2),
    ("5.", 5 * G),
    ("+3", 3 * G),
    ("-1.5", -3 * G // 2),
    ("1e-3", 10**6),
    ("1e+3", 1000 * G),
    ("5n", 5),
    ("2u", 2000),
    ("0.1", G // 10),
    ("0.000000001", 1),
    # more than nine fractional digits: rounded up to the next nano-unit, away from zero
    ("0.0000000001", 1),
    ("1.0000000001", G + 1),
    ("-0.0000000001", -1),
    ("1.0000000000", G),
    ("0.0000000001Ki", 103),  # 102.4n
    ("1e-999", 1),
    # binary-SI values are capped at 2^63-1 units
    ("8Ei", (2**63 - 1) * G),
    ("7Ei", 7 * 2**60 * G),
    (2, 2 * G),
    (1.5, 3 * G // 2),
    ("0", 0),
    ("-0", 0),
]
NOT_QUANTITIES = [
    "",
    ".",
    "+",
    "abc",
    "1gi",
    "1e",
    "1K",
    "1 ",
    " 1",
    "1.5.5",
    "1e1000",
    "1ei",
    "--1",
    None,
    True,
    [1],
    {},
]


@pytest.mark.parametrize(("text", "nanos"), EXACT, ids=[repr(t) for t, _ in EXACT])
def test_exact_value(text, nanos, rego_podsets):
    assert parse_nanos(text) == nanos
    rego = rego_podsets.engine.eval_query("x := data.lib.trainer.nanos.parse(input.q)", {"q": text}).bindings
    assert rego == [{"x": nanos}]


@pytest.mark.parametrize("text", NOT_QUANTITIES, ids=repr)
def test_not_a_quantity(text, rego_podsets):
    assert parse_nanos(text) is None
    rego = rego_podsets.engine.eval_query("x := data.lib.trainer.nanos.parse(input.q)", {"q": text}).bindings
    assert rego == []


@pytest.mark.parametrize(
    ("nanos", "text"),
    [(0, "0"), (G, "1"), (38 * G, "38"), (G // 2, "500m"), (1500, "1500n"), (2000, "2u"), (-3 * G, "-3")],
)
def test_format_keeps_the_value(nanos, text, rego_podsets):
    assert format_nanos(nanos) == text
    assert parse_nanos(text) == nanos
    rego = rego_podsets.engine.eval_query("x := data.lib.trainer.nanos.format(input.n)", {"n": nanos}).bindings
    assert rego == [{"x": text}]
