"""The fast parameter check agrees with jsonschema's Draft7Validator, which stays the authority."""

from __future__ import annotations

import glob
from pathlib import Path

import jsonschema
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy.gatekeeper import schema_check
from tests.cli.helpers import PROJECT_ROOT

TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]
NAMES = st.sampled_from(["a", "b", "label", "allowedValues"])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 1.5, -2.0])
    | st.sampled_from(["", "a", "b", "ExternalData"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)


def schemas() -> st.SearchStrategy[object]:
    def node(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
        keyword_values = {
            "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
            "enum": st.lists(json_values, min_size=1, max_size=3),
            "properties": st.dictionaries(NAMES, children, max_size=3),
            "items": children,
            "required": st.lists(NAMES, max_size=2, unique=True),
            "additionalProperties": children,
            "description": st.just("annotation"),
            "x-kubernetes-preserve-unknown-fields": st.booleans(),
        }
        return st.fixed_dictionaries({}, optional=keyword_values)

    return st.recursive(st.booleans() | st.just({}), node, max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(schema=schemas(), value=json_values)
def test_agrees_with_jsonschema_on_the_handled_subset(schema: object, value: object) -> None:
    expected = jsonschema.Draft7Validator(schema).is_valid(value)
    assert schema_check.is_valid(schema, value) is expected


OTHER_KEYWORDS = [{"minimum": 1}, {"pattern": "a"}, {"anyOf": [{}]}, {"$ref": "#"}, {"uniqueItems": True}]


@settings(max_examples=50, deadline=None)
@given(value=json_values, subschema=st.sampled_from(OTHER_KEYWORDS))
def test_other_keywords_are_left_to_jsonschema(value: object, subschema: dict) -> None:
    assert schema_check.is_valid(subschema, value) is None
    assert schema_check.is_valid({"type": "object", "properties": {"a": subschema}}, {"a": value}) is None


def test_the_shipped_templates_are_decided_without_jsonschema() -> None:
    templates = glob.glob(str(PROJECT_ROOT / "bundles/gatekeeper/*/*/template.yaml"))
    assert templates
    for path in templates:
        template = yaml.safe_load(Path(path).read_text())
        constraint = yaml.safe_load(Path(path.replace("template.yaml", "constraint/constraint.yaml")).read_text())
        schema = template["spec"]["crd"]["spec"]["validation"]["openAPIV3Schema"]
        parameters = constraint["spec"].get("parameters", {})
        assert schema_check.is_valid(schema, parameters) is True, path
        if parameters:
            assert schema_check.is_valid(schema, {name: object() for name in parameters}) is False
