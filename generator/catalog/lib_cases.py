"""Cases tables of the shared Rego libs: (expression, expected value).

Rendered to policies/<profile>/lib/trainer/*_test.rego.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LibCase:
    name: str
    expression: str
    """A Rego expression over the lib's own package (e.g. `parse("1Gi")`)."""
    expected: Any


QUANTITY_EQUAL = [
    ("milli_equals_one", "1000m", "1"),
    ("gi_equals_1024_mi", "1Gi", "1024Mi"),
    ("k_equals_1000", "1k", "1000"),
    ("exponent_equals_k", "1e3", "1k"),
    ("upper_exponent", "1E3", "1000"),
    ("mega", "2M", "2000000"),
    ("giga", "1G", "1000000000"),
    ("tera", "1T", "1000000000000"),
    ("nano", "1000000000n", "1"),
    ("micro", "1500u", "1500000n"),
    ("fraction", "0.5", "500m"),
    ("leading_dot", ".5Ki", "512"),
    ("negative_exponent", "1e-3", "1m"),
    ("ki", "1Ki", "1024"),
    ("ti_pi", "1Pi", "1024Ti"),
    ("exa", "1E", "1000P"),
    ("ei", "1Ei", "1024Pi"),
    ("plus_sign", "+2", "2"),
    ("number_and_string", "3", 3),
]
NOT_QUANTITIES = [
    ("word", "abc"),
    ("bare_exponent", "1e"),
    ("lower_gi", "1gi"),
    ("unit_only", "Mi"),
    ("empty", ""),
    ("huge_exponent", "1e99999"),
    ("spaces", " 1"),
    ("null", None),
    ("boolean", True),
    ("list", [1]),
]


def _rego(value: Any) -> str:
    import json

    return json.dumps(value)


def quantity_cases() -> list[LibCase]:
    cases = [LibCase(f"equal_{name}", f"parse({_rego(a)}) == parse({_rego(b)})", True) for name, a, b in QUANTITY_EQUAL]
    cases += [LibCase("different_values", 'not parse("1") == parse("2")', True)]
    cases += [LibCase(f"not_a_quantity_{name}", f"not parse({_rego(value)})", True) for name, value in NOT_QUANTITIES]
    return cases


def semantic_cases() -> list[LibCase]:
    pairs = [
        ("absent_null_empty", "null", "[]", True),
        ("empty_object_and_null", '{"a": {}}', '{"a": null}', True),
        ("nested_empty_list", '[{"a": 1, "b": []}]', '[{"a": 1}]', True),
        ("order_matters", "[1, 2]", "[2, 1]", False),
        ("quantity_requests", '{"requests": {"cpu": "1"}}', '{"requests": {"cpu": "1000m"}}', True),
        ("quantity_limits_memory", '{"limits": {"memory": "1Gi"}}', '{"limits": {"memory": "1024Mi"}}', True),
        ("size_limit", '{"emptyDir": {"sizeLimit": "1Gi"}}', '{"emptyDir": {"sizeLimit": "1024Mi"}}', True),
        ("quantity_only_under_resources", '{"name": "1"}', '{"name": "1000m"}', False),
        ("scalar_vs_null", '"x"', "null", False),
        ("different_values", '{"a": 1}', '{"a": 2}', False),
        ("same", '{"a": [1]}', '{"a": [1]}', True),
        (
            "lists_one_entry_differs",
            '[{"a": 1}, {"requests": {"cpu": "1"}}]',
            '[{"a": 1}, {"requests": {"cpu": "2"}}]',
            False,
        ),
        (
            "lists_entries_equal_by_value",
            '[{"a": 1}, {"requests": {"cpu": "1"}}]',
            '[{"a": 1}, {"requests": {"cpu": "1000m"}}]',
            True,
        ),
        ("lists_of_different_length", "[1]", "[1, 2]", False),
        # Go's DeepEqual never equates slices of different non-zero lengths, even if the extra entry is empty.
        ("extra_empty_entry", "[{}]", "[]", False),
        ("nested_extra_empty_entry", '{"gates": [{}]}', '{"gates": null}', False),
        ("nested_lists_same_length_empty_entries", '{"gates": [{}]}', '{"gates": [null]}', True),
        ("quantity_number_and_string", '{"limits": {"cpu": 1}}', '{"limits": {"cpu": "1000m"}}', True),
    ]
    return [LibCase(name, f"same({a}, {b})" if eq else f"not same({a}, {b})", True) for name, a, b, eq in pairs]


def review_cases() -> list[LibCase]:
    return [
        LibCase("get_from_non_object", 'get("x", ["a"], 7)', 7),
        LibCase("get_from_object", 'get({"a": {"b": 1}}, ["a", "b"], 7)', 1),
        LibCase("array_of_non_array", "array(5)", []),
        LibCase("array_of_array", "array([1])", [1]),
        LibCase(
            "audit_applies",
            'applies_to({"CREATE"}) with input as {"review": {"operation": "", "object": {}, "oldObject": null}}',
            True,
        ),
        LibCase("absent_operation_is_audit", 'applies_to({"CREATE"}) with input as {"review": {"object": {}}}', True),
        LibCase(
            "audit_is_never_an_update",
            'not is_update with input as {"review": {"operation": "", "object": {}, "oldObject": null}}',
            True,
        ),
        LibCase(
            "delete_does_not_apply",
            'not applies_to({"CREATE"}) with input as {"review": {"operation": "DELETE"}}',
            True,
        ),
        LibCase("object_missing", 'new_object == {} with input as {"review": {"operation": "DELETE"}}', True),
        LibCase("old_object_present", 'old_object == {"a": 1} with input as {"review": {"oldObject": {"a": 1}}}', True),
        LibCase("old_object_missing", 'old_object == {} with input as {"review": {}}', True),
        LibCase(
            "update_needs_old_object",
            'not is_update with input as {"review": {"operation": "UPDATE", "object": {}}}',
            True,
        ),
    ]


def _nanos_cases() -> list[LibCase]:
    from generator.podsets.lib_tests import nanos_cases

    return [LibCase(*case) for case in nanos_cases()]


LIB_CASES: dict[str, list[LibCase]] = {
    "nanos": _nanos_cases(),
    "quantity": quantity_cases(),
    "semantic": semantic_cases(),
    "review": review_cases(),
}
