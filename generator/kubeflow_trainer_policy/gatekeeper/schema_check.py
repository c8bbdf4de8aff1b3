"""A fast "is this valid?" for the JSON Schema subset ConstraintTemplates use, so `review` need not
import jsonschema (about half of its import time) when a Constraint's parameters are valid.

It answers only for Draft 7 schemas made of `type`, `properties`, `items` (one schema), `enum`,
`required`, `additionalProperties`, boolean schemas and annotations; for any other Draft 7 keyword
it answers None and the caller asks jsonschema. A False answer is also handed to jsonschema, which
stays the authority and words the error. tests/gatekeeper/test_schema_check.py checks the answers
against jsonschema on random schemas and values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HANDLED = frozenset({"type", "properties", "items", "enum", "required", "additionalProperties"})
DRAFT7_ASSERTIONS = frozenset(
    {
        "$ref", "additionalItems", "allOf", "anyOf", "const", "contains", "dependencies", "exclusiveMaximum",
        "exclusiveMinimum", "if", "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength",
        "minProperties", "minimum", "multipleOf", "not", "oneOf", "pattern", "patternProperties", "propertyNames",
        "uniqueItems",
    }
)  # fmt: skip
"""Draft 7 keywords that can reject a value and are not handled here. Unknown keywords (description,
x-kubernetes-*, nullable, ...) and `format` (not checked without a format checker) never reject."""


class _Unsupported(Exception):
    pass


def is_valid(schema: Any, instance: Any) -> bool | None:
    """True or False as jsonschema's Draft7Validator would decide, or None when the schema uses
    something not handled here."""
    try:
        return _valid(schema, instance)
    except _Unsupported:
        return None


def _is_type(instance: Any, name: str) -> bool:
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "string":
        return isinstance(instance, str)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if isinstance(instance, bool):
        return False
    if name == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return isinstance(instance, int | float)
    raise _Unsupported(name)


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's `equal`: booleans are not numbers, containers compare element-wise."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) != isinstance(two, bool):
        return False
    return bool(one == two)


def _valid(schema: Any, instance: Any) -> bool:
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict) or DRAFT7_ASSERTIONS.intersection(schema):
        raise _Unsupported("schema")
    verdict = True
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not all(isinstance(t, str) for t in types):
            raise _Unsupported("type")
        matched = [_is_type(instance, t) for t in types]  # every name checked, so an unknown one is never skipped
        verdict = verdict and any(matched)
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            raise _Unsupported("enum")
        verdict = verdict and any(_equal(instance, option) for option in schema["enum"])
    properties = schema.get("properties", {})
    additional = schema.get("additionalProperties", True)
    required = schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(additional, bool | dict):
        raise _Unsupported("object keywords")
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if name in instance and not _valid(subschema, instance[name]):
                verdict = False
        for name, value in instance.items():
            if name not in properties and not _valid(additional, value):
                verdict = False
        if not all(name in instance for name in required):
            verdict = False
    if "items" in schema:
        items = schema["items"]
        if not isinstance(items, bool | dict):
            raise _Unsupported("items")
        if isinstance(instance, list) and not all([_valid(items, item) for item in instance]):
            verdict = False
    return verdict
