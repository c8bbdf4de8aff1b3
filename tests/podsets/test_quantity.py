"""Quantities parse to exact nano-units as apimachinery's ParseQuantity gives them, in Python and in Rego."""

from __future__ import annotations

import pytest

from kubeflow_trainer_policy.podsets.quantity import BEYOND, ceil_units, describe_nanos, format_nanos, parse_nanos

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
    # issue 29: every exponent apimachinery accepts (strconv.ParseInt, 64 bits, then int32(...))
    ("1e308", 10**317),
    ("1E+308", 10**317),
    (1e308, 10**317),
    ("1.7976931348623157e308", 17976931348623157 * 10**301),
    ("9e990", 9 * 10**999),
    ("1e+0003", 1000 * G),
    ("1e4294967296", G),  # int32(4294967296) == 0
    ("5e2147483648", 1),  # int32(2147483648) == -2147483648: rounds up to one nano-unit
    ("1e9223372036854775807", 10**8),  # int32(2^63 - 1) == -1
    ("1e-9223372036854775808", G),  # int32(-2^63) == 0
    ("123456789012345678901234567890", 123456789012345678901234567890 * G),
    ("1" + "0" * 400 + "m", 10**406),
    ("0." + "0" * 500 + "1", 1),
    ("1." + "0" * 500 + "1Ki", 1024 * G + 1),
    ("1" + "0" * 40 + "Ki", (2**63 - 1) * G),
    ("1" + "0" * 1100 + "n", BEYOND),  # zeros are not significant digits
    ("0e99999", 0),
]
BEYOND_COMPARISON = ["1e1000", "1e99999", "1e2147483647", "12e990", "1" + "0" * 1000]
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
    "1ei",
    "1e9223372036854775808",  # ParseInt fails: not a quantity in apimachinery either
    "1e1.5",  # the CRD pattern allows it, ParseQuantity does not
    "1e0Ki",
    "1" + "2" * 1100,  # more significant digits than MAX_DIGITS
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


@pytest.mark.parametrize("text", BEYOND_COMPARISON, ids=lambda t: t[:20])
def test_values_beyond_exact_comparison_are_beyond(text, rego_podsets):
    assert parse_nanos(text) == BEYOND and parse_nanos("-" + text) == -BEYOND
    query = "x := data.lib.trainer.nanos.parse(input.q); y := data.lib.trainer.nanos.describe(x)"
    assert rego_podsets.engine.eval_query(query, {"q": text}).bindings == [{"x": BEYOND, "y": "at least 1e991"}]
    assert describe_nanos(BEYOND) == "at least 1e991"


@pytest.mark.parametrize(
    ("nanos", "units"), [(0, 0), (1, 1), (G, 1), (G + 1, 2), (-3 * G // 2, -1), (10**317, 10**308)]
)
def test_ceil_units(nanos, units, rego_podsets):
    assert ceil_units(nanos) == units
    rego = rego_podsets.engine.eval_query("x := data.lib.trainer.nanos.ceil_units(input.n)", {"n": nanos}).bindings
    assert rego == [{"x": units}]


def test_format_uses_an_exponent_for_huge_whole_units(rego_podsets):
    for nanos, text in [(10**317, "1e308"), (12 * 10**26, "12e17"), (10**27 + G, "1000000000000000001")]:
        assert format_nanos(nanos) == text and parse_nanos(text) == nanos
        rego = rego_podsets.engine.eval_query("x := data.lib.trainer.nanos.format(input.n)", {"n": nanos}).bindings
        assert rego == [{"x": text}]
